/*
 * fpu-shim.c: an LD_PRELOAD library for Debian's user-mode-linux 6.1 (/usr/bin/linux), which the data-path
 * tests boot (testkit/uml/guest.ts; docs/data-path-tests.md). scripts/uml-env.sh builds it into the cache:
 *   gcc -O2 -shared -fPIC -o fpu-shim.so fpu-shim.c -ldl
 *
 * Why: UML 6.1 saves and restores each guest task's FPU state with
 *   ptrace(PTRACE_GETREGSET / PTRACE_SETREGSET, pid, NT_X86_XSTATE, {buf, L})
 * where L is its fixed sizeof(struct _xstate), 2696 bytes. The host kernel truncates a GET to L, but refuses
 * a SET shorter than the host's full XSAVE size H with EFAULT, so on a host whose XSAVE state is larger than
 * 2696 bytes (AMX tiles: about 11 KB) UML panics at boot with "ptrace set fp regs failed, errno = 14".
 * UML 6.1 has no option to limit the state it saves.
 *
 * What: when L < H, keep a full-size (H bytes) shadow of the state per UML buffer. UML keeps one buffer per
 * guest task, so the buffer's address names the task. GET reads all H bytes into the shadow and hands UML
 * the first L; SET lays UML's L bytes over the shadow and sets all H. So the parts UML cannot hold (zmm16-31,
 * AMX tiles) stay with their guest task instead of leaking between guest tasks that share a host process.
 * When L >= H (every host whose XSAVE state fits, e.g. AVX-512 without AMX: 2432 bytes) every call passes
 * through untouched: the shim does nothing.
 *
 * CSTOR_FPU_SHIM_DEBUG=1 logs the sizes of the first calls to stderr (the guest's console log).
 * testkit/uml/fpu-shim-selftest.c checks the shadow path on any AVX-512 host (test/testkit/uml-fpu-shim.test.ts).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/types.h>
#include <sys/uio.h>

#ifndef NT_X86_XSTATE
#define NT_X86_XSTATE 0x202
#endif

typedef long (*ptrace_fn)(int, pid_t, void *, void *);

static ptrace_fn real_ptrace;
static size_t host_size; /* H; 0 until probed */
static int debug = -1;
static int logged;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* Shadows, keyed by UML's buffer address (open addressing; a guest has far fewer tasks than slots). */
#define SLOTS 8192
static struct {
	void *key;
	unsigned char *state;
} slots[SLOTS];

static void init(void)
{
	if (!real_ptrace)
		real_ptrace = (ptrace_fn)dlsym(RTLD_NEXT, "ptrace");
	if (debug < 0) {
		const char *e = getenv("CSTOR_FPU_SHIM_DEBUG");
		debug = e && *e && *e != '0';
	}
}

/* The host's XSAVE size: a GET with a buffer larger than any state is truncated to the real size. */
static size_t probe_host_size(pid_t pid)
{
	static unsigned char big[65536];
	struct iovec iov = { big, sizeof(big) };
	if (real_ptrace(PTRACE_GETREGSET, pid, (void *)(uintptr_t)NT_X86_XSTATE, &iov) == 0)
		return iov.iov_len;
	return 0;
}

/* The shadow of UML buffer `key`, created zeroed on first use; NULL when the table is full. */
static unsigned char *shadow_of(void *key, int *fresh)
{
	size_t h = ((uintptr_t)key >> 4) % SLOTS;
	*fresh = 0;
	for (size_t i = 0; i < SLOTS; i++) {
		size_t s = (h + i) % SLOTS;
		if (slots[s].key == key)
			return slots[s].state;
		if (!slots[s].key) {
			slots[s].state = calloc(1, host_size);
			if (!slots[s].state)
				return NULL;
			slots[s].key = key;
			*fresh = 1;
			return slots[s].state;
		}
	}
	return NULL;
}

long ptrace(enum __ptrace_request req, ...)
{
	va_list ap;
	va_start(ap, req);
	pid_t pid = va_arg(ap, pid_t);
	void *addr = va_arg(ap, void *);
	void *data = va_arg(ap, void *);
	va_end(ap);
	init();

	if ((req != PTRACE_GETREGSET && req != PTRACE_SETREGSET) || (uintptr_t)addr != NT_X86_XSTATE || !data)
		return real_ptrace(req, pid, addr, data);

	struct iovec *uml = data;
	size_t L = uml->iov_len;
	pthread_mutex_lock(&lock);
	if (!host_size)
		host_size = probe_host_size(pid);
	size_t H = host_size;
	if (debug && logged < 6) {
		logged++;
		fprintf(stderr, "fpu-shim: %s pid=%d len=%zu host_xstate=%zu -> %s\n",
			req == PTRACE_GETREGSET ? "GETREGSET" : "SETREGSET", pid, L, H,
			H && L < H ? "shadowed" : "passthrough");
	}
	if (!H || L >= H) {
		pthread_mutex_unlock(&lock);
		return real_ptrace(req, pid, addr, data);
	}

	int fresh;
	unsigned char *shadow = shadow_of(uml->iov_base, &fresh);
	static unsigned char spare[65536]; /* used under the lock when the table is full */
	unsigned char *full = shadow ? shadow : spare;
	struct iovec iov = { full, H };
	long r;
	if (req == PTRACE_GETREGSET) {
		r = real_ptrace(PTRACE_GETREGSET, pid, addr, &iov);
		if (r == 0) {
			size_t n = iov.iov_len < L ? iov.iov_len : L;
			memcpy(uml->iov_base, full, n);
			uml->iov_len = n;
		}
	} else {
		/* Nothing saved for this task yet: start from the target's current state. */
		if (!shadow || fresh) {
			struct iovec get = { full, H };
			real_ptrace(PTRACE_GETREGSET, pid, addr, &get);
		}
		memcpy(full, uml->iov_base, L);
		iov.iov_len = H;
		r = real_ptrace(PTRACE_SETREGSET, pid, addr, &iov);
	}
	int saved = errno;
	pthread_mutex_unlock(&lock);
	errno = saved;
	return r;
}
