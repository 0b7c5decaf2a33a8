/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * spin_threads(n, seconds): starts n threads of its own (pthreads, no Python
 * thread state: what a BLAS or OpenMP pool is) that each spin for `seconds`
 * of their own CPU time, and waits for them, as a parallel library call does.
 * Returns 0, or -1 when a thread could not be started.
 */
#include <pthread.h>
#include <time.h>

static double thread_cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *spin(void *arg)
{
	double until = thread_cpu_s() + *(const double *)arg;
	volatile unsigned long x = 1;

	while (thread_cpu_s() < until) {
		for (int i = 0; i < 10000; i++)
			x = x * 6364136223846793005ul + 1;
	}
	return NULL;
}

int spin_threads(int n, double seconds)
{
	pthread_t t[64];
	int i, started = 0, err = 0;

	if (n < 1 || n > 64)
		return -1;
	for (i = 0; i < n; i++) {
		if (pthread_create(&t[i], NULL, spin, &seconds)) {
			err = -1;
			break;
		}
		started++;
	}
	for (i = 0; i < started; i++)
		pthread_join(t[i], NULL);
	return err;
}
