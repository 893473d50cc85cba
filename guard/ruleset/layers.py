"""The layers of a rule set, in order: the shipped ``rules/`` folder, each file or folder in
``GUARD_RULES``, then the config file (``GUARD_CONFIG``); and how a later layer's config joins an
earlier one's."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from guard.record import dataclass


@cache
def shipped_rules_dir() -> Path:
    from pathlib import Path

    here = Path(__file__).resolve().parent.parent  # guard/
    for cand in (here.parent / "rules", here / "rules"):
        if (cand / "config.yaml").exists():
            return cand
    return here.parent / "rules"


@dataclass(frozen=True)
class Layer:
    name: str
    files: tuple[Path, ...]
    shipped: bool = False


def tree_layer(base: Path, name: str) -> Layer:
    """A whole rule tree laid out as the shipped one (config.yaml, programs/, commands/, stderr/)."""
    return Layer(name, (base / "config.yaml", *(f for sub in ("programs", "dialects", "commands", "stderr")
                                               for f in sorted((base / sub).glob("*.yaml")))), True)


def rule_layers(extra: tuple[str, ...], config_path: str | None) -> list[Layer]:
    """The layers in order: shipped rules, each GUARD_RULES entry, the config file."""
    from pathlib import Path

    base = shipped_rules_dir()
    layers = [tree_layer(base, "rules/")]
    from guard.ruleset.paths import entry_path

    for p in extra:
        path = Path(entry_path(p))
        if path.is_dir():
            found = {q for q in path.rglob("*") if q.suffix in (".yaml", ".yml") and q.is_file()}
            layers.append(Layer(p, tuple(sorted(found))))
        elif path.exists():
            layers.append(Layer(p, (path,)))
    if config_path:
        layers.append(Layer(config_path, (Path(config_path),)))
    return layers


def rule_files(extra: tuple[str, ...], config_path: str | None) -> list[Path]:
    """Every YAML file that contributes, in layering order."""
    return [f for layer in rule_layers(extra, config_path) for f in layer.files]


def display(f: Path) -> str:
    """How a rule file is named in messages: ``rules/…`` for shipped files, else as given."""
    base = shipped_rules_dir()
    try:
        return "rules/" + str(f.resolve().relative_to(base.resolve()))
    except (ValueError, OSError):
        return str(f)




def merge_config(into: dict[str, Any], new: Mapping[str, Any], said: list[str] | None = None) -> None:
    """Later keys replace earlier ones; mappings merge by name; ``KEY+: [...]`` adds to a list.
    ``said`` collects, for each list an earlier layer set, whether this layer replaced or extended it."""
    for k, v in new.items():
        if isinstance(k, str) and k.endswith("+") and isinstance(v, list):
            have = list(into.get(k[:-1]) or [])
            into[k[:-1]] = have + [x for x in v if x not in have]
            if said is not None and have:
                said.append(f"{k[:-1]}: extended ({len(have)} earlier + {len(into[k[:-1]]) - len(have)} added)")
        elif isinstance(v, dict) and isinstance(into.get(k), dict):
            into[k] = {**into[k], **v}
        else:
            if said is not None and isinstance(v, list) and isinstance(into.get(k), list):
                said.append(f"{k}: replaced ({len(into[k])} earlier entries dropped; write {k}+: to add to them)")
            into[k] = v
