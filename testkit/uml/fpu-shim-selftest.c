/*
 * fpu-shim-selftest.c: checks testkit/uml/fpu-shim.c's shadow path on any x86-64 host with AVX, by acting as a
 * UML whose XSAVE buffer ends where one of the host's vector register components starts (zmm16-31 with AVX-512,
 * else the upper halves of ymm0-15). test/testkit/uml-fpu-shim.test.ts builds it and runs it with
 * LD_PRELOAD=fpu-shim.so. A traced child plays the guest's host process; two short buffers play two guest tasks.
 * Raw syscalls (no shim) set and read the full state to check what the shim did.
 * Prints one line per check; exits 0 when all pass, 1 when one fails (a host without AVX fails: say so).
 */
#define _GNU_SOURCE
#include <cpuid.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#define NT_X86_XSTATE 0x202
#define XMM0 160    /* offset of xmm0 in the legacy FXSAVE area */

static pid_t child;

/* Past the shim: the kernel's own answer. */
static long raw(long request, void *buffer, size_t length)
{
	struct iovec iov = { buffer, length };
	return syscall(SYS_ptrace, request, child, NT_X86_XSTATE, &iov);
}

/* Through the shim (the libc wrapper it overrides), as UML calls it. */
static long shimmed(enum __ptrace_request request, void *buffer, size_t length)
{
	struct iovec iov = { buffer, length };
	return ptrace(request, child, (void *)NT_X86_XSTATE, &iov);
}

static int failures;
static void check(const char *what, int ok)
{
	printf("%s: %s\n", what, ok ? "ok" : "FAIL");
	failures += !ok;
}

int main(void)
{
	unsigned eax, ebx, ecx, edx;
	__cpuid_count(0xd, 0, eax, ebx, ecx, edx);
	size_t host = ebx; /* XSAVE size for the features XCR0 enables */
	/* The component the short buffer leaves out: Hi16_ZMM (7) with AVX-512, else YMM_Hi128 (2). */
	int component = (eax & (1u << 7)) ? 7 : (eax & (1u << 2)) ? 2 : 0;
	if (!component) {
		printf("FAIL: this host has no AVX state (XCR0 %#x): the shim's shadow path cannot be shown\n", eax);
		return 1;
	}
	__cpuid_count(0xd, component, eax, ebx, ecx, edx);
	size_t zmm_size = eax, zmm_at = ebx;
	/* A UML buffer that ends where that component starts: shorter than the host's state, as on AMX hosts. */
	const size_t UML_LEN = zmm_at;

	child = fork();
	if (child == 0) {
		ptrace(PTRACE_TRACEME, 0, 0, 0);
		raise(SIGSTOP);
		_exit(0);
	}
	waitpid(child, NULL, 0);

	unsigned char *state = calloc(1, host), *seen = calloc(1, host);
	unsigned char *task_a = calloc(1, UML_LEN), *task_b = calloc(1, UML_LEN);
	raw(PTRACE_GETREGSET, state, host);
	state[512 + component / 8] |= 1u << (component % 8); /* XSTATE_BV: the component is present */

	check("a short SET without the shim fails (the bug the shim works around)",
	      raw(PTRACE_SETREGSET, task_a, UML_LEN) == -1);

	/* Task A runs with the component = 0x11, and is switched out (GET). */
	memset(state + zmm_at, 0x11, zmm_size);
	raw(PTRACE_SETREGSET, state, host);
	check("GET of task A through the shim", shimmed(PTRACE_GETREGSET, task_a, UML_LEN) == 0);
	/* Task B runs with 0x22, and is switched out. */
	memset(state + zmm_at, 0x22, zmm_size);
	raw(PTRACE_SETREGSET, state, host);
	check("GET of task B through the shim", shimmed(PTRACE_GETREGSET, task_b, UML_LEN) == 0);

	/* Task A is switched in again: its registers come back, not B's. */
	check("SET of task A through the shim", shimmed(PTRACE_SETREGSET, task_a, UML_LEN) == 0);
	raw(PTRACE_GETREGSET, seen, host);
	check("task A gets its own registers back", seen[zmm_at] == 0x11 && seen[zmm_at + zmm_size - 1] == 0x11);
	check("SET of task B through the shim", shimmed(PTRACE_SETREGSET, task_b, UML_LEN) == 0);
	raw(PTRACE_GETREGSET, seen, host);
	check("task B gets its own registers back", seen[zmm_at] == 0x22 && seen[zmm_at + zmm_size - 1] == 0x22);

	/* What UML changes in its part (xmm0) reaches the task; the rest stays the task's. */
	task_a[XMM0] ^= 0xff;
	shimmed(PTRACE_SETREGSET, task_a, UML_LEN);
	raw(PTRACE_GETREGSET, seen, host);
	check("an edit of UML's part reaches the task", seen[XMM0] == task_a[XMM0] && seen[zmm_at] == 0x11);

	/* A buffer as large as the host's state passes through. */
	check("a full-size GET passes through", shimmed(PTRACE_GETREGSET, seen, host) == 0);
	check("a full-size SET passes through", shimmed(PTRACE_SETREGSET, seen, host) == 0);

	printf("host XSAVE size %zu bytes, UML buffer %zu bytes, component %d at %zu (+%zu)\n", host, UML_LEN,
	       component, zmm_at, zmm_size);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	return failures ? 1 : 0;
}
