// SPDX-License-Identifier: BSD-2-Clause
/*
 * Attaching to a running interpreter (sampler.h, "Attaching"): the exported
 * scalene_bpf_sampler_attach(), the watcher thread that follows the
 * profiler's heartbeat and control word, and the restore it has the main
 * thread run.
 *
 * The profiler writes attach_beat and attach_ctl with process_vm_writev,
 * which wakes no futex: the watcher polls.  The restore must hold the GIL
 * (no wrapper call is then in flight, and CPython wants hooks changed under
 * it).  The watcher asks the main thread to run it, with Py_AddPendingCall,
 * which CPython lets any thread call without the GIL; the call runs at the
 * main thread's next check for pending calls, within milliseconds while it
 * runs bytecode.  Two cases never get there, measured: a main thread blocked
 * in C (Thread.join(), Event.wait(), a long read; every version), and, on
 * 3.9-3.12, one that never lets go of the GIL, since a call queued by a thread
 * without a thread state does not trip the main thread's eval breaker
 * (CPython issue 95820; fixed in 3.13).  So after RESCUE_MS the watcher takes
 * the GIL itself (PyGILState_Ensure: a thread state from the raw domain,
 * which nothing of ours wraps) and restores; whichever comes second finds
 * it done.
 *
 * The library is never unloaded (-z nodelete): threads that sampled hold its
 * thread-exit destructor (a pthread key), a covered wrapper stays in its
 * chain, and the watcher may still be returning.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <time.h>

#include "sampler_int.h"

#define POLL_MS 100	      /* how often the watcher reads the control word and the beat */
#define RETRY_MS 10	      /* Py_AddPendingCall's queue was full: try again after */
#define DEFAULT_STALE_MS 3000 /* stale_ms 0: the beat is lost after 3 s unchanged */
#define RESCUE_MS 1000	      /* the pending call has not run: restore from the watcher */

static struct {
	int (*add_pending_call)(int (*fn)(void *), void *arg);
	int (*is_initialized)(void);
	int (*gil_ensure)(void); /* PyGILState_STATE is an enum */
	void (*gil_release)(int state);
} py;

static uint32_t claim;	  /* one attach at a time per process, fork children included */
static uint32_t stale_ms; /* written before the watcher starts */
static uint32_t restored; /* the restore ran (the pending call or the rescue) */

static void state_set(uint32_t bits)
{
	__atomic_fetch_or(&sbs_state.attach_state, bits, __ATOMIC_RELEASE);
}

static void state_clear(uint32_t bits)
{
	__atomic_fetch_and(&sbs_state.attach_state, ~bits, __ATOMIC_RELEASE);
}

static void sleep_ms(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = ms % 1000 * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static uint64_t now_ms(void)
{
	struct timespec ts = { 0 };

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* With the GIL held, once.  Off first, so that a wrapper left in a chain
 * samples nothing from then on. */
static void restore_once(void)
{
	uint32_t expected = 0;

	if (!__atomic_compare_exchange_n(&restored, &expected, 1, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_RELAXED))
		return;
	__atomic_store_n(&sbs_off, 1, __ATOMIC_RELEASE);
	state_set(sbs_pywrap_restore());
}

/* The pending call: the main thread runs it with the GIL held. */
static int restore_pending(void *arg)
{
	restore_once();
	return 0;
}

static int py_alive(void)
{
	return !py.is_initialized || py.is_initialized();
}

/* Returns SBS_AT_DETACH_ASKED or SBS_AT_BEAT_LOST, whichever comes first.  The
 * beat is timed by the clock, not by counting polls, which a busy machine
 * stretches. */
static uint32_t wait_for_end(void)
{
	uint64_t beat = __atomic_load_n(&sbs_state.attach_beat, __ATOMIC_RELAXED);
	uint64_t since = now_ms(), b, now;

	for (;;) {
		sleep_ms(POLL_MS);
		if (__atomic_load_n(&sbs_state.attach_ctl, __ATOMIC_RELAXED) & SBS_CTL_DETACH)
			return SBS_AT_DETACH_ASKED;
		b = __atomic_load_n(&sbs_state.attach_beat, __ATOMIC_RELAXED);
		now = now_ms();
		if (b != beat) {
			beat = b;
			since = now;
		} else if (now - since >= stale_ms) {
			return SBS_AT_BEAT_LOST;
		}
	}
}

/*
 * Once the interpreter is finalising, the pending call would never run and
 * Py_AddPendingCall or PyGILState_Ensure could reach a freed interpreter:
 * the wraps are left to the exit.  Py_IsInitialized() turns false early in
 * Py_FinalizeEx, long before the interpreter is freed, which leaves a window
 * this cannot close; PyGILState_Ensure called in it ends the thread (3.9-3.13)
 * or blocks it for good (3.14), which costs nothing here: it holds no lock.
 */
static void *watch(void *arg)
{
	uint64_t rescue_at = 0;
	int gil;

	/* Named: the profiler leaves it out. */
	prctl(PR_SET_NAME, SCALENE_BPF_SAMPLER_THREAD, 0, 0, 0);
	state_set(wait_for_end());
	while (py_alive() && !__atomic_load_n(&restored, __ATOMIC_ACQUIRE)) {
		if (!rescue_at && py.add_pending_call(restore_pending, NULL) == 0)
			rescue_at = now_ms() + RESCUE_MS;
		if (rescue_at && now_ms() >= rescue_at && py.gil_ensure && py.gil_release) {
			gil = py.gil_ensure();
			restore_once();
			py.gil_release(gil);
			break;
		}
		sleep_ms(RETRY_MS);
	}
	state_clear(SBS_AT_WATCHING);
	return NULL;
}

/* Detached (nothing joins it) and with every signal blocked, so that the
 * program's handlers never run on it. */
static int start_watcher(void)
{
	pthread_attr_t attr;
	sigset_t all, old;
	pthread_t tid;
	int err;

	err = pthread_attr_init(&attr);
	if (err)
		return -err;
	err = pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (!err) {
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		err = pthread_create(&tid, &attr, watch, NULL);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	}
	pthread_attr_destroy(&attr);
	return -err;
}

/*
 * A later attach, once an earlier one's detach gave both domains back
 * (RESTORED, not COVERED) and its watcher ended: nothing of ours is in a
 * chain then, and, the GIL held, no wrapper call is in flight, so the
 * wrappers' saved allocators may be written again.  Threads that reached a
 * slow path while sampling was off (a free-threaded build's, running beside
 * the restore) come back to one within 4 GiB (sampler.c: park) and seed
 * themselves again there.  A fork child (FORKED) never attaches again: its
 * parent's wrappers are in its chains with nothing to take them out.
 */
static int claim_again(void)
{
	uint32_t st = __atomic_load_n(&sbs_state.attach_state, __ATOMIC_ACQUIRE);

	if (!(st & SBS_AT_RESTORED) || (st & (SBS_AT_COVERED | SBS_AT_FORKED | SBS_AT_WATCHING)))
		return -EALREADY;
	__atomic_store_n(&restored, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&sbs_state.attach_ctl, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&sbs_state.attach_state, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&sbs_off, 0, __ATOMIC_RELEASE);
	return 0;
}

#define LOOKUP(field, name) (*(void **)&py.field = dlsym(RTLD_DEFAULT, name))

/*
 * Called with the GIL held (ctypes.PyDLL), from the main thread.  Allocates
 * nothing through Python: dlsym and pthread_create may call libc's malloc,
 * whose hook is not ours in a process that dlopen()ed the library.
 */
SBS_EXPORT int scalene_bpf_sampler_attach(__u64 sample_bytes, __u32 stale)
{
	uint32_t expected = 0;
	int err;

	/* Not again once found: a watcher may be reading them. */
	if (!py.add_pending_call) {
		LOOKUP(is_initialized, "Py_IsInitialized");
		LOOKUP(gil_ensure, "PyGILState_Ensure");
		LOOKUP(gil_release, "PyGILState_Release");
		LOOKUP(add_pending_call, "Py_AddPendingCall");
	}
	err = sbs_pywrap_attachable();
	if (!err && !py.add_pending_call)
		err = -ENOSYS;
	if (err)
		return err;
	/* parse_size's bound: draw_gap's double keeps its precision. */
	if (sample_bytes > (1ull << 50))
		return -EINVAL;
	if (!__atomic_compare_exchange_n(&claim, &expected, 1, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_RELAXED)) {
		err = claim_again();
		if (err)
			return err;
	}

	stale_ms = stale ? stale : DEFAULT_STALE_MS;
	if (sample_bytes)
		sbs_state.sample_bytes = sample_bytes;
	/* Other threads seed again at their next slow path; this one, which
	 * the constructor seeded with the old mean, at once. */
	__atomic_add_fetch(&sbs_gen, 1, __ATOMIC_RELEASE);
	sbs_reseed();
	sbs_pywrap_attach();
	state_set(SBS_AT_ATTACHED | SBS_AT_WATCHING);
	err = start_watcher();
	/* Said again on every attach: a profiler that attaches after another
	 * one left learns where the state block is (the constructor said it
	 * once, to the first). */
	if (!err)
		sbs_announce();
	if (err) {
		/* Still under the same hold of the GIL: nothing has covered the
		 * wrappers, and no allocation went through them (attach makes
		 * none), so the state is back as it was. */
		sbs_pywrap_restore();
		state_clear(SBS_AT_ATTACHED | SBS_AT_WATCHING);
		__atomic_store_n(&claim, 0, __ATOMIC_RELEASE);
	}
	return err;
}

/* The atfork child handler's part: the watcher does not exist in the child,
 * and nothing would ever take the wraps out, so sampling stops there. */
void sbs_attach_after_fork(void)
{
	uint32_t st = __atomic_load_n(&sbs_state.attach_state, __ATOMIC_ACQUIRE);

	if (!(st & SBS_AT_ATTACHED) || (st & SBS_AT_RESTORED))
		return;
	__atomic_store_n(&sbs_off, 1, __ATOMIC_RELEASE);
	state_clear(SBS_AT_WATCHING);
	state_set(SBS_AT_FORKED);
}
