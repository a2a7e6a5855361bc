"""smdebug's ``ReductionConfig`` (``smdebug.core.reduction_config``): which reductions of a tensor a
hook saves instead of, or beside, the tensor itself. The JSON form is the one collection files and
the hook's JSON configuration use: ``{"save_raw_tensor": b, "reductions": "min,l2_norm,abs_mean",
"save_shape": b}``, the tokens in smdebug's order (plain, norms, abs, abs norms)."""
from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Sequence, Union

from .exceptions import SMDebugValueError

ALLOWED_REDUCTIONS = ["min", "max", "mean", "std", "variance", "sum", "prod"]
ALLOWED_NORMS = ["l1", "l2"]


def split(comma_separated_string: Union[str, Sequence[str], None]) -> List[str]:
    """"a, b,,c" -> ["a", "b", "c"]; a list is returned as it is."""
    if isinstance(comma_separated_string, (list, tuple)):
        return list(comma_separated_string)
    if not comma_separated_string:
        return []
    return [x.strip() for x in str(comma_separated_string).split(",") if x.strip()]


class ReductionConfig:
    """Reductions (``min max mean std variance sum prod``), norms (``l1 l2``), each also of the
    absolute values, plus whether the raw tensor and its shape are saved too."""

    def __init__(self, reductions: Optional[Sequence[str]] = None, abs_reductions: Optional[Sequence[str]] = None,
                 norms: Optional[Sequence[str]] = None, abs_norms: Optional[Sequence[str]] = None,
                 save_raw_tensor: bool = False, save_shape: bool = False) -> None:
        self.reductions = list(reductions) if reductions is not None else []
        self.abs_reductions = list(abs_reductions) if abs_reductions is not None else []
        self.norms = list(norms) if norms is not None else []
        self.abs_norms = list(abs_norms) if abs_norms is not None else []
        self.save_raw_tensor = save_raw_tensor
        self.save_shape = save_shape
        bad = [r for r in self.reductions + self.abs_reductions if r not in ALLOWED_REDUCTIONS]
        if bad:
            raise SMDebugValueError("reductions can only be one of " + ",".join(ALLOWED_REDUCTIONS) +
                                    " (got {})".format(",".join(map(str, bad))))
        bad = [n for n in self.norms + self.abs_norms if n not in ALLOWED_NORMS]
        if bad:
            raise SMDebugValueError("norms can only be one of " + ",".join(ALLOWED_NORMS) +
                                    " (got {})".format(",".join(map(str, bad))))

    def _tokens(self) -> List[str]:
        return (list(self.reductions) + ["{}_norm".format(n) for n in self.norms] +
                ["abs_{}".format(r) for r in self.abs_reductions] + ["abs_{}_norm".format(n) for n in self.abs_norms])

    def to_json_dict(self) -> Dict[str, Any]:
        return {"save_raw_tensor": self.save_raw_tensor, "reductions": ",".join(self._tokens()),
                "save_shape": self.save_shape}

    def to_json(self) -> str:
        return json.dumps(self.to_json_dict())

    @classmethod
    def from_dict(cls, params: Optional[Dict[str, Any]]) -> Optional[ReductionConfig]:
        """From the JSON form; ``reductions`` a comma list or a list of tokens. None gives None."""
        if params is None:
            return None
        if not isinstance(params, dict):
            raise SMDebugValueError("params={} must be a dict".format(params))
        kinds: Dict[str, List[str]] = {"reductions": [], "abs_reductions": [], "norms": [], "abs_norms": []}
        for token in split(params.get("reductions", "")):
            is_abs = token.startswith("abs_")
            body = token[len("abs_"):] if is_abs else token
            is_norm = body.endswith("_norm")
            if is_norm:
                body = body[: -len("_norm")]
            kinds[("abs_" if is_abs else "") + ("norms" if is_norm else "reductions")].append(body)
        return cls(save_raw_tensor=params.get("save_raw_tensor", False), save_shape=params.get("save_shape", False),
                   **kinds)

    @classmethod
    def from_json(cls, json_str: str) -> Optional[ReductionConfig]:
        return cls.from_dict(json.loads(json_str))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ReductionConfig) and self.to_json_dict() == other.to_json_dict()

    def __hash__(self) -> int:
        return hash(self.to_json())

    def __repr__(self) -> str:
        return ("<class ReductionConfig: reductions={}, abs_reductions={}, norms={}, abs_norms={}, save_raw_tensor={}, "
                "save_shape={}>".format(self.reductions, self.abs_reductions, self.norms, self.abs_norms,
                                        self.save_raw_tensor, self.save_shape))


__all__ = ["ReductionConfig", "ALLOWED_REDUCTIONS", "ALLOWED_NORMS", "split"]
