"""Arrays the grader lends the worker: one sealed shared-memory file that both map.

The grader writes each array argument of a call into the arena and sends the worker
only where it lies (offset, dtype, shape); the learner's function gets an ordinary
ndarray over that memory. After the call the grader reads the bytes back itself, so
whether the call changed its inputs is judged from what is in memory, not from what the
worker says. The file's size is sealed: the worker cannot shrink it under the grader.
Linux only (memfd); elsewhere the arrays travel in the frames and the worker reports them.
"""
import mmap
import os

import numpy as np

ALIGNMENT = 64  # bytes: every array starts on a cache line, as NumPy's own allocations do
SIZE = 256 << 20  # bytes reserved (memory is used only where arrays are written)


class Arena:
    """The grader's side: put arrays, read them back; the worker's side: view them."""

    def __init__(self, fd: int, size: int, memory: mmap.mmap | None = None) -> None:
        self.fd, self.size, self.memory, self.used = fd, size, memory, 0

    @classmethod
    def create(cls, size: int = SIZE) -> "Arena | None":
        """A new sealed arena, or None where memfd is not available."""
        if not hasattr(os, "memfd_create"):
            return None
        import fcntl

        fd = os.memfd_create("attncore-arguments", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        os.ftruncate(fd, size)
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS,
                    fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
        return cls(fd, size)

    @classmethod
    def attach(cls, fd: int, size: int) -> "Arena":
        """The worker's view of the arena it inherited as descriptor fd."""
        return cls(fd, size, mmap.mmap(fd, size))

    def start_call(self) -> None:
        """Forget the previous call's arrays: each call's arrays start at offset 0."""
        self.used = 0

    def put(self, array: np.ndarray) -> list | None:
        """Write array into the arena; return where it lies, or None when it does not fit."""
        array = np.ascontiguousarray(array)
        offset = -(-self.used // ALIGNMENT) * ALIGNMENT
        if array.dtype.hasobject or offset + array.nbytes > self.size:
            return None
        os.pwrite(self.fd, array.tobytes(), offset)
        self.used = offset + array.nbytes
        return [offset, array.dtype.str, list(array.shape)]

    def read(self, place: list) -> np.ndarray:
        """The grader's copy of the array at place, as the arena holds it now."""
        offset, dtype, shape = place
        count = int(np.prod(shape, dtype=np.int64))
        data = os.pread(self.fd, count * np.dtype(dtype).itemsize, offset)
        return np.frombuffer(data, dtype=dtype, count=count).reshape(shape).copy()

    def view(self, place: list) -> np.ndarray:
        """The worker's array over the arena's memory at place (writes land there)."""
        offset, dtype, shape = place
        return np.ndarray(tuple(shape), dtype=np.dtype(dtype), buffer=self.memory, offset=offset)

    def close(self) -> None:
        if self.memory is not None:
            self.memory.close()
        os.close(self.fd)
