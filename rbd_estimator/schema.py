"""The parameter schema: every parameter's type, description, default, range or allowed values, and
when a change takes effect — written once, beside the code that reads it.

* A sensor kind, :class:`~rbd_estimator.estimation.config.ContactConfig` and the node's
  ``NodeSettings`` are dataclasses whose fields are their parameters: each field is declared with
  :func:`parameter` (a description, a range …), and :func:`fields_of` reads them back as
  :class:`Field` objects (the type from the field's annotation).
* The loop declarations (:mod:`rbd_estimator.model.loops`) write their :class:`Field` tables by hand.
* :class:`Schema` puts them together: exact names (``rate_hz``) and :class:`Group` s of parameters
  per named instance (``ft.<name>.force_stddev`` for every name that ``ft_sensors`` lists).

The parsers convert and check values with :meth:`Field.value`; the node declares the parameters
that apply to its values with ROS descriptors made from the same fields
(:mod:`rbd_estimator.ros.declare`); the parameter tables of ``docs/node.md`` and ``docs/sensors.md``
are :meth:`Schema.markdown` (``python -m rbd_estimator.runtime.params --write-docs``).
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Mapping

from .errors import ConfigError
from .yaml_file import name_list, unknown_parameter


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


#: The default of a parameter that has none: it must be given (declared once it is).
REQUIRED: Any = _Required()

#: When a change of the parameter takes effect on the node.
LIVE, REPLAN, REACTIVATE, CONFIGURE = "live", "replan", "reactivate", "configure"
CHANGES = {LIVE: "applies at once",
           REPLAN: "a new plan, swapped in between two ticks",
           REACTIVATE: "refused while active: deactivate, set, activate",
           CONFIGURE: "refused while active: takes effect at the next configure"}

#: Parameter types, as ROS 2 names them (``rcl_interfaces/ParameterType``, lower case).
TYPES = ("bool", "integer", "double", "string", "string_array", "double_array")
_FROM_ANNOTATION = {"bool": "bool", "int": "integer", "float": "double", "str": "string"}
_DOC_TYPE = {"string_array": "string[]", "double_array": "double[]"}
_KEY = "rbd_estimator.parameter"          # the dataclass field metadata key of :func:`parameter`


@dataclass(frozen=True)
class Field:
    """One parameter: ``type`` (one of :data:`TYPES`), ``description`` (units included),
    ``default`` (:data:`REQUIRED`: none), bounds ``gt``/``ge``/``le`` (numbers), ``choices``
    (allowed values), ``size`` (an array's length) and ``change`` (when a change takes effect on
    the node: :data:`LIVE`, :data:`REPLAN`, :data:`REACTIVATE` or :data:`CONFIGURE`)."""
    type: str
    description: str
    default: Any = REQUIRED
    gt: float | None = None
    ge: float | None = None
    le: float | None = None
    choices: tuple = ()
    size: int | None = None
    change: str = REPLAN

    def __post_init__(self):
        if self.type not in TYPES:
            raise TypeError(f"parameter type {self.type!r} is not one of {TYPES}")
        if self.change not in CHANGES:
            raise TypeError(f"parameter change {self.change!r} is not one of {tuple(CHANGES)}")
        if not self.description:
            raise TypeError("a parameter needs a description")

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    def value(self, name: str, value, error: type = ConfigError):
        """``value`` as the field's Python value (``double`` → float, arrays → tuples), or
        ``error`` naming the parameter ``name`` when it is not of the type, outside the range or
        not one of the allowed values."""
        v = _typed(self.type, name, value, error)
        if self.size is not None and len(v) != self.size:
            raise error(f"parameter '{name}' must hold {self.size} values, got {value!r}")
        if self.type in ("integer", "double") and not ((self.gt is None or v > self.gt)
                                                      and (self.ge is None or v >= self.ge)
                                                      and (self.le is None or v <= self.le)):
            raise error(f"parameter '{name}' must be a number {self.bounds()}, got {value!r}")
        if self.choices and v not in self.choices:
            raise error(f"parameter '{name}': {v!r} is not one of {self.choices}")
        return v

    def bounds(self) -> str:
        """The range as text (``> 0``, ``>= 0, <= 1``), empty without one."""
        parts = [f"{op} {_number(b)}" for op, b in ((">", self.gt), (">=", self.ge), ("<=", self.le)) if b is not None]
        return ", ".join(parts)

    def constraints(self) -> str:
        """Range, allowed values and size as text."""
        parts = [self.bounds()] if self.bounds() else []
        if self.choices:
            parts.append("one of " + ", ".join(f"`{c}`" if c != "" else '`""`' for c in self.choices))
        if self.size is not None:
            parts.append(f"{self.size} values")
        return "; ".join(parts)


def parameter(description: str, default=dataclasses.MISSING, *, required: bool = False, type: str | None = None,
              gt=None, ge=None, le=None, choices: tuple = (), size: int | None = None, change: str = REPLAN):
    """A dataclass field that is a parameter (read back by :func:`fields_of`): its ``default`` is
    the dataclass default too; ``required`` (or no default) makes the parameter's default
    :data:`REQUIRED` whatever the dataclass holds; ``type`` overrides the annotation's."""
    meta = dict(description=description, required=required, type=type, gt=gt, ge=ge, le=le, choices=tuple(choices),
                size=size, change=change)
    return dataclasses.field(default=default, metadata={_KEY: meta})


def fields_of(cls) -> dict[str, Field]:
    """The parameters of a dataclass (its fields declared with :func:`parameter`), by field name."""
    out = {}
    for f in dataclasses.fields(cls):
        meta = f.metadata.get(_KEY)
        if meta is None:
            continue
        meta = dict(meta)
        kind = meta.pop("type") or _annotation_type(cls, f)
        required = meta.pop("required") or f.default is dataclasses.MISSING
        out[f.name] = Field(type=kind, default=REQUIRED if required else f.default, **meta)
    return out


def read_fields(fields: Mapping[str, Field], values: Mapping, prefix: str, error: type = ConfigError) -> dict:
    """``values`` (field → value, as given) of the parameters ``<prefix><field>`` converted and
    checked by their :class:`Field`: an unknown field is an ``error`` naming the closest valid one,
    a required field missing or empty is one too."""
    kw = {}
    for key, value in values.items():
        if key not in fields:
            raise unknown_parameter(f"{prefix}{key}", [f"{prefix}{k}" for k in fields], error)
        kw[key] = fields[key].value(f"{prefix}{key}", value, error)
    for key, f in fields.items():
        if f.required and kw.get(key, "") in ("", ()):
            raise error(f"parameter '{prefix}{key}' is required ({f.description})")
    return kw


def undescribed(cls) -> list[str]:
    """The fields of a dataclass that are not declared with :func:`parameter` (``name`` aside)."""
    return [f.name for f in dataclasses.fields(cls) if f.name != "name" and _KEY not in f.metadata]


def _annotation_type(cls, f) -> str:
    ann = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
    if ann.startswith("tuple"):
        return "double_array"
    if ann not in _FROM_ANNOTATION:
        raise TypeError(f"{cls.__name__}.{f.name}: annotation {ann!r} has no parameter type; pass type=")
    return _FROM_ANNOTATION[ann]


# ---------------------------------------------------------------------------- values
def _typed(kind: str, name: str, value, error: type):
    if kind == "bool":
        if isinstance(value, bool):
            return value
        raise error(f"parameter '{name}' must be true or false, got {value!r}")
    if kind in ("integer", "double"):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or (kind == "integer"
                                                                            and not isinstance(value, int)):
            raise error(f"parameter '{name}' must be {'an integer' if kind == 'integer' else 'a number'}, "
                        f"got {value!r}")
        if not math.isfinite(value):
            raise error(f"parameter '{name}' must be a finite number, got {value!r}")
        return float(value) if kind == "double" else int(value)
    if kind == "string":
        if isinstance(value, str):
            return value
        raise error(f"parameter '{name}' must be a string, got {value!r}")
    if kind == "string_array":
        return name_list(value, name, error)
    return numbers(name, value, error)


def numbers(name: str, value, error: type = ConfigError) -> tuple[float, ...]:
    """A list of finite numbers as a tuple of floats, or ``error`` naming the parameter."""
    if isinstance(value, (str, bytes)) or not hasattr(value, "__len__") \
            or any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in value):
        raise error(f"parameter '{name}' must be a list of numbers, got {value!r}")
    if not all(math.isfinite(v) for v in value):
        raise error(f"parameter '{name}' has a non-finite value")
    return tuple(float(v) for v in value)


def _number(x) -> str:
    return str(int(x)) if float(x).is_integer() else repr(x)


# ---------------------------------------------------------------------------- schemas
@dataclass(frozen=True)
class Group:
    """Parameters per named instance: ``<prefix>.<name>.<field>`` for every name that the list
    parameter ``names`` lists (the field ``""`` is ``<prefix>.<name>`` itself). Without ``names``
    there is one instance, ``<prefix>.<field>``, present when any parameter under ``<prefix>.`` is
    given (the IMU). ``when = (field, value)``: the group applies to the instances whose ``field``
    has that value (one group per loop type). ``placeholder`` names the instance in the docs."""
    prefix: str
    fields: Mapping[str, Field]
    names: str = ""
    when: tuple | None = None
    placeholder: str = "name"

    def name(self, instance: str, field: str) -> str:
        parts = [self.prefix] + ([instance] if self.names else []) + ([field] if field else [])
        return ".".join(parts)

    def instances(self, values: Mapping, defaults: Mapping) -> tuple[str, ...]:
        """The instances that ``values`` (given parameters; ``defaults`` for the list parameters
        not given) declare, or none when the list does not hold names."""
        if not self.names:
            return ("",) if any(k.startswith(self.prefix + ".") for k in values) else ()
        try:
            listed = name_list(values.get(self.names, defaults.get(self.names, ())), self.names, ConfigError)
        except ConfigError:
            return ()
        if self.when is None:
            return listed
        key, want = self.when
        return tuple(n for n in listed if values.get(f"{self.prefix}.{n}.{key}") == want)


@dataclass(frozen=True)
class Schema:
    """Every parameter of a reader, in the order of the docs' tables: ``entries`` are
    ``(name, Field)`` pairs (exact names) and :class:`Group` s. Combine with ``+``."""
    entries: tuple = ()

    @classmethod
    def of(cls, top: Mapping[str, Field] = None, *groups: Group) -> "Schema":
        return cls(tuple((top or {}).items()) + groups)

    def __add__(self, other: "Schema") -> "Schema":
        return Schema(self.entries + other.entries)

    @property
    def top(self) -> dict[str, Field]:
        """The parameters with exact names."""
        return {e[0]: e[1] for e in self.entries if not isinstance(e, Group)}

    @property
    def groups(self) -> tuple[Group, ...]:
        return tuple(e for e in self.entries if isinstance(e, Group))

    def expand(self, values: Mapping) -> dict[str, Field]:
        """Concrete name → :class:`Field` of every parameter that applies to ``values`` (the given
        parameters): the exact names, and each group's fields for every instance it has."""
        defaults = {k: f.default for k, f in self.top.items() if not f.required}
        out = dict(self.top)
        for g in self.groups:
            for n in g.instances(values, defaults):
                out.update({g.name(n, k): f for k, f in g.fields.items()})
        return out

    def rows(self, only=None) -> list[tuple[str, Field]]:
        """``(pattern, Field)`` of every parameter (``ft.<name>.force_stddev``), in declaration
        order; ``only(pattern)`` filters."""
        rows = []
        for e in self.entries:
            if isinstance(e, Group):
                rows += [(e.name(f"<{e.placeholder}>", k), f) for k, f in e.fields.items()]
            else:
                rows.append(e)
        seen, out = set(), []
        for pattern, f in rows:              # a field of several groups (loop types) once per meaning
            if (pattern, f.description) not in seen and (only is None or only(pattern)):
                seen.add((pattern, f.description))
                out.append((pattern, f))
        return out

    def markdown(self, only=None, change: bool = True) -> str:
        """The parameter table (``| parameter | type | default | meaning |``): the description, then
        the constraints and, with ``change``, when a change takes effect (unless it is a new plan)."""
        lines = ["| parameter | type | default | meaning |", "| --- | --- | --- | --- |"]
        for pattern, f in self.rows(only):
            meaning = f.description.rstrip(".")
            if f.constraints() and not (f.choices and all(f"`{c}`" in f.description for c in f.choices if c)):
                meaning += f" ({f.constraints()})"
            if change and f.change != REPLAN:
                meaning += f"; {CHANGES[f.change]}"
            lines.append(f"| `{pattern}` | {_DOC_TYPE.get(f.type, f.type)} | {_doc_default(f)} | {meaning} |")
        return "\n".join(lines) + "\n"


def _doc_default(f: Field) -> str:
    if f.required:
        return "required"
    d = f.default
    if isinstance(d, bool):
        return f"`{str(d).lower()}`"
    if isinstance(d, str):
        return f"`{d}`" if d else '`""`'
    if isinstance(d, (tuple, list)):
        return "`[" + ", ".join(_number(x) if isinstance(x, (int, float)) else str(x) for x in d) + "]`"
    return f"`{_number(d) if isinstance(d, float) else d}`"
