/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef ORFS_TESTS_UNIT_H
#define ORFS_TESTS_UNIT_H

#include <CUnit/CUnit.h>

/* Each test file defines one of these to add its suite to the registry. */
int unit_add_proto_suite(void);
int unit_add_dispatch_suite(void);
int unit_add_block_suite(void);
int unit_add_sched_suite(void);
int unit_add_workers_suite(void);
int unit_add_config_suite(void);
int unit_add_fsvc_suite(void);
int unit_add_replay_suite(void);
int unit_add_locks_suite(void);
int unit_add_auth_suite(void);

#endif
