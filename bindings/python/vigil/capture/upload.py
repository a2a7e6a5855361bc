"""Trials bound for a store (``s3://bucket/prefix``): the hook writes them into a local staging folder
exactly as it writes a local trial, and ``_vigil.TrialUploader`` copies the published files there on
its own thread (data files, then index files, the end marker last, so a reader of the store never
sees an index before its event file). The hook finishes the upload when it closes.

``$VIGIL_STAGING_DIR`` names the folder the staging folders are made in (the system's temp folder
otherwise); ``$VIGIL_UPLOAD_TIMEOUT_SECONDS`` (default 60) bounds the wait for the last uploads. The
first Ctrl-C during that wait ends it: the files left stay staged, and the log says where.
"""
import os

from .. import _vigil

STAGING_ENV = "VIGIL_STAGING_DIR"
TIMEOUT_ENV = "VIGIL_UPLOAD_TIMEOUT_SECONDS"


def is_remote(location):
    """Whether the hook cannot write `location` in place and stages it for upload instead."""
    return _vigil.needs_staging(str(location))


class StagedUpload:
    """One location written through a staging folder: ``local_dir`` is where the files go."""

    def __init__(self, location, logger, scan_interval_s=1.0):
        self.location = str(location)
        self.logger = logger
        self.local_dir = _vigil.make_staging_folder()
        self._uploader = _vigil.TrialUploader(self.local_dir, self.location, scan_interval_s)
        self.report = None

    def local_path(self, location):
        """`location` inside this one, as a path in the staging folder; None when it is not inside."""
        location = str(location)
        if location == self.location:
            return self.local_dir
        prefix = self.location.rstrip("/") + "/"
        if location.startswith(prefix):
            return os.path.join(self.local_dir, location[len(prefix):])
        return None

    def log_faults(self):
        """The uploader's faults (each kind once) into the hook's log."""
        for message in self._uploader.take_messages():
            self.logger.warning("vigil upload: %s", message)

    def finish(self, timeout_s=None):
        """The last uploads, waited for up to the timeout or the first Ctrl-C (consumed); what was left
        is logged. Never raises."""
        if self.report is not None:
            return self.report
        try:
            if timeout_s is None:
                timeout_s = _vigil.upload_timeout_from_environment()
            self.report = self._uploader.finish(timeout_s)
            self.log_faults()
            left = self.report["files_left"]
            if left:
                self.logger.error("vigil upload: %d file(s) staged in %s were not uploaded to %s: %s",
                                  len(left), self.local_dir, self.location, self.report["error"])
        except Exception as e:  # noqa: BLE001 - the end of training must not fail for it
            self.report = {"files_uploaded": 0, "bytes_uploaded": 0, "files_left": None, "error": str(e)}
            self.logger.error("vigil upload to %s failed: %s: %s", self.location, type(e).__name__, e)
        return self.report


__all__ = ["StagedUpload", "is_remote", "STAGING_ENV", "TIMEOUT_ENV"]
