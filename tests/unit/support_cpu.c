/* Test support: CPU time of this process, for complexity guards. */
#include <time.h>

#include "support_cpu.h"

long long
mb_test_cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
