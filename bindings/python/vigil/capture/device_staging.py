"""Device values captured without making training wait (docs/capture.md, "GPU capture"). On a step
that saves, each CUDA value is copied on the training stream into a device snapshot (a
device-to-device copy, which later in-place updates such as the optimizer's cannot reach), and a
side stream that waits for that point of the training stream copies the snapshot, non_blocking,
into a pinned host buffer; the training thread goes on at once. A thread of the hook's
(``vigil-staging``) waits for each copy's event, hands the host buffer to the writer's queue
(``_vigil.QueuedWriter``, which copies it) and returns the buffer to its pool.

The buffers come from a bounded pool (``StagingPool``) and are reused from step to step. When it
has no room for a value, the step is dropped whole, as the writer's byte budget drops one: it is
published with ``vigil/dropped_step`` = 1, and training never waits for a buffer.

``StagedWriter`` is the hook's writer while device values are staged: it has the writer's methods,
and a step reaches the writer whole, in order, once its copies are done. Values that are already on
the host (numpy arrays: scalars, save_tensor values) are copied into a pool buffer at once. The
device side is an object with ``handles(tensor)``, ``allocate(nbytes)``, ``start_copy(value,
buffer)`` (returns an event) and ``wait(event)``: ``CudaCopies`` on a GPU; the tests give a stand-in
on the CPU.
"""
import collections
import threading

import numpy as np
import torch


class StagingPool:
    """Host buffers (1-D uint8 tensors) of at most `max_bytes` in all, reused: ``acquire`` gives the
    smallest free buffer that holds `nbytes`, else a new one while the bound allows (freeing unused
    buffers that are too small to make room), else None; ``release`` gives a buffer back. Thread-safe:
    the training thread acquires, the staging thread releases."""

    def __init__(self, max_bytes, allocate):
        self.max_bytes = int(max_bytes)
        self._allocate = allocate
        self._free = []
        self._lock = threading.Lock()
        self.allocated_bytes = 0
        self.in_use = 0

    def acquire(self, nbytes):
        nbytes = max(int(nbytes), 1)
        with self._lock:
            fits = [i for i, b in enumerate(self._free) if b.numel() >= nbytes]
            if fits:
                # By position: list.remove would compare tensors with ==, element by element
                buffer = self._free.pop(min(fits, key=lambda i: self._free[i].numel()))
                self.in_use += 1
                return buffer
            while self.allocated_bytes + nbytes > self.max_bytes and self._free:
                self.allocated_bytes -= self._free.pop().numel()
            if self.allocated_bytes + nbytes > self.max_bytes:
                return None
            self.allocated_bytes += nbytes
            self.in_use += 1
        try:
            return self._allocate(nbytes)
        except BaseException:
            with self._lock:
                self.allocated_bytes -= nbytes
                self.in_use -= 1
            raise

    def release(self, buffer):
        with self._lock:
            self._free.append(buffer)
            self.in_use -= 1


def host_view(buffer, like):
    """The first bytes of `buffer` as a tensor of `like`'s dtype and shape."""
    nbytes = like.numel() * like.element_size()
    return buffer[:nbytes].view(like.dtype).view(like.shape)


class CudaCopies:
    """Device-to-host copies on a side CUDA stream per device, into pinned buffers."""

    def __init__(self):
        self._side = {}

    @staticmethod
    def handles(tensor):
        return tensor.is_cuda

    @staticmethod
    def allocate(nbytes):
        return torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)

    def start_copy(self, value, buffer):
        training = torch.cuda.current_stream(value.device)
        side = self._side.get(value.device)
        if side is None:
            side = self._side[value.device] = torch.cuda.Stream(value.device)
        # On the training stream: the value as it is at this point (contiguous), out of reach of the
        # in-place updates queued after it.
        snapshot = value.detach().clone(memory_format=torch.contiguous_format)
        side.wait_stream(training)
        with torch.cuda.stream(side):
            host_view(buffer, snapshot).copy_(snapshot, non_blocking=True)
            done = torch.cuda.Event()
            done.record(side)
        snapshot.record_stream(side)  # its memory is not reused before the side stream's copy ran
        return done

    @staticmethod
    def wait(event):
        event.synchronize()  # releases the GIL while it waits


class _Item:
    __slots__ = ("name", "buffer", "value", "event", "save_shape", "reductions", "save_raw", "wall_time")

    def __init__(self, name, buffer, value, event, save_shape, reductions, save_raw, wall_time):
        self.name, self.buffer, self.value, self.event = name, buffer, value, event
        self.save_shape, self.reductions, self.save_raw, self.wall_time = save_shape, reductions, save_raw, wall_time


class _Step:
    __slots__ = ("begin", "items", "dropped", "nbytes")

    def __init__(self, begin):
        self.begin, self.items, self.dropped, self.nbytes = begin, [], False, 0


class StagedWriter:
    """A ``_vigil.QueuedWriter``'s methods over it, with device values staged (module docstring).
    `budget`: the writer's byte budget (a step dropped here is handed to the writer as one that does
    not fit it); the pool holds at most `pool_bytes`; `to_numpy`: a numpy view of a host tensor."""

    def __init__(self, writer, copies, budget, pool_bytes, to_numpy):
        self.writer = writer
        self.copies = copies
        self.pool = StagingPool(pool_bytes, copies.allocate)
        self._budget = int(budget)
        self._to_numpy = to_numpy
        self._step = None  # the step being gathered on the training thread
        self._queue = collections.deque()  # _Step, ("collections", json) or None (stop)
        self._wake = threading.Condition()
        self._thread = None
        self._error = None
        self._abandon = False

    # ---- the training thread ----------------------------------------------------------------------------------
    def begin_step(self, global_step, mode, mode_step, expected_bytes=0):
        self._step = _Step((global_step, mode, mode_step))
        return True

    def write(self, name, value, save_shape, reductions, save_raw, wall_time=None):
        """A host value (numpy), copied now."""
        step = self._step
        if step is None or step.dropped:
            return
        if value.dtype.kind in "USO":
            self._add(step, _Item(name, None, np.array(value, copy=True), None, save_shape, reductions, save_raw,
                                  wall_time))
            return
        value = np.ascontiguousarray(value)
        buffer = self._buffer(step, value.nbytes)
        if buffer is None:
            return
        copy = buffer.numpy()[:value.nbytes].view(value.dtype).reshape(value.shape)
        np.copyto(copy, value)
        self._add(step, _Item(name, buffer, copy, None, save_shape, reductions, save_raw, wall_time))

    def write_device(self, name, value, save_shape, reductions, save_raw):
        """A device tensor (``copies.handles`` it): its copy starts now; the writer gets it when done."""
        step = self._step
        if step is None or step.dropped:
            return
        buffer = self._buffer(step, value.numel() * value.element_size())
        if buffer is None:
            return
        event = self.copies.start_copy(value, buffer)
        self._add(step, _Item(name, buffer, host_view(buffer, value), event, save_shape, reductions, save_raw, None))

    def end_step(self):
        step, self._step = self._step, None
        if step is not None:
            self._push(step)

    def publish_collections(self, json_text):
        self._push(("collections", json_text))

    def error(self):
        return self._error or self.writer.error()

    def close(self, end_marker):
        """Waits for every staged step to reach the writer (with `end_marker` False: abandons them),
        then closes the writer; None or the first error."""
        self.end_step()
        if not end_marker:
            self._abandon = True
        self._push(None)
        if self._thread is not None:
            # Abandoned (the hook's fault): a copy that never completes must not hold training
            self._thread.join(timeout=None if end_marker else 5)
        err = self.writer.close(end_marker)
        return self._error or err

    def _buffer(self, step, nbytes):
        buffer = self.pool.acquire(nbytes)
        if buffer is None:
            step.dropped = True  # its buffers go back once their copies are done (_run)
        return buffer

    @staticmethod
    def _add(step, item):
        step.items.append(item)
        step.nbytes += item.value.nbytes if isinstance(item.value, np.ndarray) else \
            item.value.numel() * item.value.element_size()

    def _push(self, op):
        with self._wake:
            self._queue.append(op)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="vigil-staging", daemon=True)
                self._thread.start()
            self._wake.notify()

    # ---- the staging thread -----------------------------------------------------------------------------------
    def _run(self):
        while True:
            with self._wake:
                while not self._queue:
                    self._wake.wait()
                op = self._queue.popleft()
            if op is None:
                return
            if self._abandon:
                continue
            try:
                if isinstance(op, _Step):
                    self._write_step(op)
                else:
                    self.writer.publish_collections(op[1])
            except Exception as e:  # noqa: BLE001 - the hook reads it from error() and steps aside
                if self._error is None:
                    self._error = "staging failed: {}: {}".format(type(e).__name__, e)
                self._abandon = True

    def _write_step(self, step):
        try:
            self._write_items(step)
        finally:
            for item in step.items:  # after a fault too (the hook then steps aside)
                self._release(item)

    def _write_items(self, step):
        global_step, mode, mode_step = step.begin
        if step.dropped:
            for item in step.items:
                self._done(item)
            # Over the writer's budget by construction: the writer drops it as it drops its own
            self.writer.begin_step(global_step, mode, mode_step, self._budget + 1)
        else:
            self.writer.begin_step(global_step, mode, mode_step, step.nbytes)
            for item in step.items:
                if item.event is not None:
                    self.copies.wait(item.event)
                value = item.value if isinstance(item.value, np.ndarray) else self._to_numpy(item.value)
                self.writer.write(item.name, value, item.save_shape, item.reductions, item.save_raw,
                                  wall_time=item.wall_time)
                self._release(item)
        self.writer.end_step()

    def _done(self, item):
        if item.event is not None:
            self.copies.wait(item.event)
        self._release(item)

    def _release(self, item):
        if item.buffer is not None:
            self.pool.release(item.buffer)
            item.buffer = None
