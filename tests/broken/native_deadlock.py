"""scalar_mix deadlocks in native code: it locks a pthread mutex it already holds. The thread never
comes back to Python, so no signal handler of the harness ever runs."""

import ctypes

from elmo_conformance.adapters.numpy import NumpyAdapter

_LIBC = ctypes.CDLL(None)
_MUTEX = ctypes.create_string_buffer(64)  # zeroed: PTHREAD_MUTEX_INITIALIZER, a normal (non-recursive) mutex


class NativeDeadlock(NumpyAdapter):
    name = "native-deadlock"

    def scalar_mix(self, s, gamma, layers):
        _LIBC.pthread_mutex_lock(_MUTEX)
        _LIBC.pthread_mutex_lock(_MUTEX)  # waits for itself, in C, forever
        return super().scalar_mix(s, gamma, layers)


adapter = NativeDeadlock()
