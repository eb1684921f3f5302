// SPDX-License-Identifier: GPL-2.0-only
/*
 * folio-count: how much of a file's page cache is held in large folios.
 * Maps FILE read-only, touches each page (it comes from the page cache,
 * read in if it was not there), then reads each page's frame number from
 * /proc/self/pagemap and its flags from /proc/kpageflags: a page that is
 * the head or a tail of a compound page belongs to a large folio.
 *
 *   folio-count FILE [PAGE]
 *
 * Prints "pages N large M" (M of the N pages of FILE are in large folios)
 * and, with PAGE, "together PAGE yes" or "together PAGE no": are pages
 * PAGE and PAGE + 1 of FILE in one folio (the second is a tail page in
 * the frame right after the first's)? Needs root (frame numbers and
 * kpageflags). Exit status: 0 counted, 1 an error, 2 usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define PM_PRESENT		(1ULL << 63)
#define PM_PFN_MASK		((1ULL << 55) - 1)
#define KPF_COMPOUND_HEAD	15
#define KPF_COMPOUND_TAIL	16

struct counter {
	const char	*file;
	int		pagemap;
	int		kpageflags;
	long		page;
};

/* The 64-bit entry at INDEX of the table FD (NAME for messages), or -1 after a message. */
static int read_entry(int fd, const char *name, uint64_t index, uint64_t *v)
{
	ssize_t n = pread(fd, v, sizeof(*v), (off_t)(index * sizeof(*v)));

	if (n == (ssize_t)sizeof(*v))
		return 0;
	if (n < 0)
		fprintf(stderr, "folio-count: read %s at entry %llu: %s\n", name,
			(unsigned long long)index, strerror(errno));
	else
		fprintf(stderr, "folio-count: read %s at entry %llu: short read\n", name,
			(unsigned long long)index);
	return -1;
}

/*
 * Is the page mapped at ADDR in a large folio? 1 yes, 0 no, -1 error.
 * *PFN and *FLAGS: its frame number and kpageflags.
 */
static int page_in_large_folio(struct counter *c, const volatile uint8_t *addr, uint64_t *pfn,
			       uint64_t *flags)
{
	uint64_t pm;

	(void)*addr;	/* fault it in from the page cache */
	if (read_entry(c->pagemap, "/proc/self/pagemap", (uintptr_t)addr / (uint64_t)c->page, &pm))
		return -1;
	if (!(pm & PM_PRESENT) || !(pm & PM_PFN_MASK)) {
		fprintf(stderr, "folio-count: %s: page at %p not present or no frame number (root?)\n",
			c->file, (const void *)addr);
		return -1;
	}
	*pfn = pm & PM_PFN_MASK;
	if (read_entry(c->kpageflags, "/proc/kpageflags", *pfn, flags))
		return -1;
	return !!(*flags & ((1ULL << KPF_COMPOUND_HEAD) | (1ULL << KPF_COMPOUND_TAIL)));
}

int main(int argc, char **argv)
{
	struct counter c = { .pagemap = -1, .kpageflags = -1 };
	long pages, large = 0, i, page = -1;
	uint64_t pfn, flags, prev_pfn = 0;
	int together = 0;
	uint8_t *map = MAP_FAILED;
	struct stat st;
	int fd, ret = 1;

	if (argc == 3) {
		char *end;

		page = strtol(argv[2], &end, 10);
		if (*end || page < 0)
			page = -2;
	}
	if (argc < 2 || argc > 3 || page == -2) {
		fprintf(stderr, "usage: folio-count FILE [PAGE]\n");
		return 2;
	}
	c.file = argv[1];
	c.page = sysconf(_SC_PAGESIZE);
	fd = open(c.file, O_RDONLY);
	if (fd < 0) {
		fprintf(stderr, "folio-count: open %s: %s\n", c.file, strerror(errno));
		return 1;
	}
	if (fstat(fd, &st)) {
		fprintf(stderr, "folio-count: stat %s: %s\n", c.file, strerror(errno));
		goto out;
	}
	pages = (long)((st.st_size + c.page - 1) / c.page);
	if (page >= 0 && page + 1 >= pages) {
		fprintf(stderr, "folio-count: %s has no page %ld and one after it\n", c.file, page);
		goto out;
	}
	if (pages) {
		map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
		if (map == MAP_FAILED) {
			fprintf(stderr, "folio-count: mmap %s: %s\n", c.file, strerror(errno));
			goto out;
		}
	}
	c.pagemap = open("/proc/self/pagemap", O_RDONLY);
	if (c.pagemap < 0) {
		fprintf(stderr, "folio-count: open /proc/self/pagemap: %s\n", strerror(errno));
		goto out;
	}
	c.kpageflags = open("/proc/kpageflags", O_RDONLY);
	if (c.kpageflags < 0) {
		fprintf(stderr, "folio-count: open /proc/kpageflags: %s\n", strerror(errno));
		goto out;
	}
	for (i = 0; i < pages; i++) {
		int r = page_in_large_folio(&c, map + i * c.page, &pfn, &flags);

		if (r < 0)
			goto out;
		large += r;
		if (i == page + 1)
			together = pfn == prev_pfn + 1 && (flags & (1ULL << KPF_COMPOUND_TAIL));
		prev_pfn = pfn;
	}
	printf("pages %ld large %ld\n", pages, large);
	if (page >= 0)
		printf("together %ld %s\n", page, together ? "yes" : "no");
	ret = 0;
out:
	if (c.kpageflags >= 0)
		close(c.kpageflags);
	if (c.pagemap >= 0)
		close(c.pagemap);
	if (map != MAP_FAILED)
		munmap(map, (size_t)st.st_size);
	close(fd);
	return ret;
}
