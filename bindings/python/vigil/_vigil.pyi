# The extension module (bindings/src/) for type checkers: its classes and functions are Any; the
# Python modules around it carry the public API's types.
from typing import Any

__version__: str

def __getattr__(name: str) -> Any: ...
