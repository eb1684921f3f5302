// SPDX-License-Identifier: GPL-2.0-only
/*
 * Userspace unit tests (CUnit). Prints every test and a closing line
 * "unit: N passed, N failed"; exits non-zero when anything failed.
 */
#include <stdio.h>
#include <stdlib.h>

#include <CUnit/Basic.h>

#include "tests/unit/unit.h"

int main(void)
{
	unsigned int run, failed;

	if (CU_initialize_registry() != CUE_SUCCESS) {
		fprintf(stderr, "unit: cannot initialise CUnit: %s\n", CU_get_error_msg());
		return 2;
	}
	if (unit_add_proto_suite() || unit_add_dispatch_suite() || unit_add_block_suite() ||
	    unit_add_sched_suite() || unit_add_config_suite() ||
	    unit_add_fsvc_suite() || unit_add_replay_suite() || unit_add_workers_suite() ||
	    unit_add_locks_suite() || unit_add_auth_suite()) {
		fprintf(stderr, "unit: cannot register the suites: %s\n", CU_get_error_msg());
		CU_cleanup_registry();
		return 2;
	}
	CU_basic_set_mode(CU_BRM_VERBOSE);
	if (CU_basic_run_tests() != CUE_SUCCESS) {
		fprintf(stderr, "unit: CUnit failed to run: %s\n", CU_get_error_msg());
		CU_cleanup_registry();
		return 2;
	}
	run = CU_get_number_of_tests_run();
	failed = CU_get_number_of_tests_failed();
	printf("unit: %u passed, %u failed\n", run - failed, failed);
	CU_cleanup_registry();
	return failed ? 1 : 0;
}
