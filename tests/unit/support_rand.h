/*
 * A deterministic pseudo-random generator for the property tests
 * (xorshift64): each test keeps its own state, so a failure found with a
 * seed can be run again.
 */
#ifndef MB_TEST_SUPPORT_RAND_H
#define MB_TEST_SUPPORT_RAND_H

#include <stdint.h>

/* The next 32 bits from *state (not 0), which advances. */
uint32_t	mb_test_rand(uint64_t *state);

#endif
