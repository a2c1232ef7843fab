"""Reading the package's YAML files (parameter files, loop files) with errors that name the file or
the parameter."""
from __future__ import annotations

import difflib


def read_yaml(path, error: type, what: str):
    """The YAML document at ``path``; ``error(...)`` naming the file when it cannot be read."""
    import yaml
    try:
        with open(path, encoding="utf-8") as fh:
            return yaml.safe_load(fh)
    except OSError as exc:
        raise error(f"cannot read {what} '{path}': {exc}") from exc
    except yaml.YAMLError as exc:
        raise error(f"{what} '{path}' is not valid YAML: {exc}") from exc


def name_list(value, key: str, error: type) -> tuple[str, ...]:
    """The parameter ``key`` as a tuple of distinct non-empty names (empty when unset or ``[]``);
    ``error(...)`` naming ``key`` otherwise."""
    if value is None or value == "" or value == []:
        return ()
    if isinstance(value, str) or not all(isinstance(v, str) and v for v in value):
        raise error(f"parameter '{key}' must be a list of names, got {value!r}")
    if len(set(value)) != len(value):
        raise error(f"parameter '{key}' lists a name twice: {list(value)}")
    return tuple(value)


def unknown_parameter(name: str, valid, error: type, what: str = "parameter"):
    """``error(...)`` for the unknown parameter ``name``, naming the closest of ``valid``
    (:func:`difflib.get_close_matches`) when one is close: ``unknown parameter 'contact.FL.mdoe'
    (did you mean 'contact.FL.mode'?)``. Returned, not raised."""
    close = difflib.get_close_matches(name, sorted(set(valid)), n=1)
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    return error(f"unknown {what} '{name}'{hint}")
