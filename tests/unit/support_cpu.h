/*
 * Complexity guards in the parser tests (a hostile input that is quadratic
 * costs minutes, a linear one a second) are measured in this process's CPU
 * time, not wall time, so a loaded machine cannot fail them.  They are
 * guards with 10x headroom, not speed targets: those live in scripts/bench-*.
 */
#ifndef MB_TEST_SUPPORT_CPU_H
#define MB_TEST_SUPPORT_CPU_H

long long	mb_test_cpu_ms(void);

#endif
