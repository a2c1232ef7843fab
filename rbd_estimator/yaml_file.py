"""Reading the package's YAML files (parameter files, loop files) with errors that name the file."""
from __future__ import annotations


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
