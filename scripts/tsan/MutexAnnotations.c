// Tells ThreadSanitizer about the locking that `Mutex` (from the Synchronization module)
// does out of its sight on Linux. Linked into the test binary by scripts/tsan.sh only.
//
// Why it is needed: `Mutex.withLock` is inlined into the caller, so its fast path (an
// atomic compare-and-exchange, acquiring to lock, releasing to unlock) is compiled with the
// sanitizer and seen. When the lock is contended, it calls `_MutexHandle._lockSlow` and
// `_unlockSlow` in libswiftSynchronization.so, which is not instrumented and hands the lock
// over through the kernel (a priority-inheritance futex). ThreadSanitizer then sees no
// happens-before edge between two threads that took the lock one after the other, and
// reports every contended `withLock` body as a "Swift access race": a false positive.
// (Four threads adding 1 under one Mutex 200,000 times each get 800,000 and a report.)
//
// The fix is not a suppression, which would hide real races in the same functions: these
// definitions of the three slow-path entry points are linked into the binary ahead of the
// library's, call the library's own, and add the edge the futex made: an acquire once the
// slow path has taken the lock, a release before the slow path gives it up. Both use the
// lock word's address, like the fast path's atomics. Code that touches guarded state
// without the lock is still reported.
//
// Swift passes `self` (the address of the lock word) in the swiftself register, which
// clang spells `swift_context` on a `swiftcall` function.

#if defined(__linux__) && defined(__has_feature)
#if __has_feature(thread_sanitizer)

#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

void __tsan_acquire(void *address);
void __tsan_release(void *address);

#define LOCK_SLOW "$s15Synchronization12_MutexHandleV9_lockSlowyys6UInt32VF"
#define TRY_LOCK_SLOW "$s15Synchronization12_MutexHandleV12_tryLockSlowSbyF"
#define UNLOCK_SLOW "$s15Synchronization12_MutexHandleV11_unlockSlowyyF"

typedef __attribute__((swiftcall)) void (*LockSlow)(
    uint32_t threadID, __attribute__((swift_context)) void *handle);
typedef __attribute__((swiftcall)) bool (*TryLockSlow)(
    __attribute__((swift_context)) void *handle);
typedef __attribute__((swiftcall)) void (*UnlockSlow)(
    __attribute__((swift_context)) void *handle);

static LockSlow libraryLockSlow;
static TryLockSlow libraryTryLockSlow;
static UnlockSlow libraryUnlockSlow;

static void *librarySymbol(const char *name) {
  void *symbol = dlsym(RTLD_NEXT, name);
  if (symbol == NULL) {
    fprintf(stderr,
            "tsan: %s is not in libswiftSynchronization.so; this toolchain's Mutex differs "
            "from the one scripts/tsan/MutexAnnotations.c was written for: update it\n",
            name);
    abort();
  }
  return symbol;
}

// Resolved before main, while there is one thread, so the pointers need no lock.
__attribute__((constructor)) static void resolveLibrarySymbols(void) {
  libraryLockSlow = (LockSlow)librarySymbol(LOCK_SLOW);
  libraryTryLockSlow = (TryLockSlow)librarySymbol(TRY_LOCK_SLOW);
  libraryUnlockSlow = (UnlockSlow)librarySymbol(UNLOCK_SLOW);
}

__attribute__((swiftcall)) void annotatedLockSlow(
    uint32_t threadID, __attribute__((swift_context)) void *handle) __asm__(LOCK_SLOW);
__attribute__((swiftcall)) void annotatedLockSlow(
    uint32_t threadID, __attribute__((swift_context)) void *handle) {
  libraryLockSlow(threadID, handle);
  __tsan_acquire(handle);
}

__attribute__((swiftcall)) bool annotatedTryLockSlow(
    __attribute__((swift_context)) void *handle) __asm__(TRY_LOCK_SLOW);
__attribute__((swiftcall)) bool annotatedTryLockSlow(
    __attribute__((swift_context)) void *handle) {
  bool locked = libraryTryLockSlow(handle);
  if (locked) __tsan_acquire(handle);
  return locked;
}

__attribute__((swiftcall)) void annotatedUnlockSlow(
    __attribute__((swift_context)) void *handle) __asm__(UNLOCK_SLOW);
__attribute__((swiftcall)) void annotatedUnlockSlow(
    __attribute__((swift_context)) void *handle) {
  __tsan_release(handle);
  libraryUnlockSlow(handle);
}

#endif
#endif
