"""The one rule of the capture side: nothing Vigil does may raise into the training loop. A capture
object (a hook, the framework profiler) marks its entry points with ``never_raises``; any exception
in them is the object's own fault, handed once to its ``_step_aside(message)``, after which
``_stepped_aside()`` is true and the entry points do nothing. Only a caller's misuse (``misuse``),
which smdebug's hook refuses with an exception, reaches the caller."""
import functools


def misuse(exc):
    """Marks an exception as the caller's misuse: ``never_raises`` lets it through to the caller, and
    the object stays enabled."""
    exc.vigil_misuse = True
    return exc


def never_raises(method=None, *, default=None):
    """``@never_raises`` or ``@never_raises(default=value)``: what the entry point returns after a
    fault, or once the object has stepped aside."""
    def wrap(method):
        @functools.wraps(method)
        def guarded(self, *args, **kwargs):
            if self._stepped_aside():
                return default
            try:
                return method(self, *args, **kwargs)
            except Exception as e:  # noqa: BLE001 - the training loop must never see it
                if getattr(e, "vigil_misuse", False):
                    raise
                self._step_aside("{} failed: {}: {}".format(method.__name__, type(e).__name__, e))
                return default
        return guarded
    return wrap(method) if method is not None else wrap
