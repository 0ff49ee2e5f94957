"""Shell completion of the values the catalog and the presets know: preset names, instance
types, regions, purchase options, accelerators. Each is a typer `autocompletion` callback
(click's shell completion: `accelstack --install-completion`), called only while a shell
completes a word, so the catalog is loaded then and never at `--help`. An overlay's types and
regions complete too (`ACCELSTACK_CATALOG_DIR`); a catalog that does not load completes
nothing rather than printing an error into the shell."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from accelstack.catalog import Catalog


def _matching(words: list[str], incomplete: str) -> list[str]:
    return sorted({w for w in words if w.startswith(incomplete)})


def _catalog() -> Catalog | None:
    from accelstack.catalog import load_catalog
    from accelstack.errors import AccelstackError

    try:
        return load_catalog()
    except AccelstackError:
        return None


def presets(incomplete: str) -> list[str]:
    """The presets `--from` takes: the project's stacks/ and the bundled ones."""
    from accelstack.cli.specfiles import BUNDLED_PRESETS

    found = [p.stem for d in (Path("stacks"), BUNDLED_PRESETS) for p in d.glob("*.yaml")]
    return _matching(found, incomplete)


def instance_types(incomplete: str) -> list[str]:
    """The accelerated instance types of the catalog (and its overlay)."""
    cat = _catalog()
    return _matching(cat.accelerated_types() if cat else [], incomplete)


def regions(incomplete: str) -> list[str]:
    cat = _catalog()
    return _matching(list(cat.regions) if cat else [], incomplete)


def purchase_options(incomplete: str) -> list[str]:
    from accelstack.catalog import PURCHASE_OPTIONS

    return _matching(list(PURCHASE_OPTIONS), incomplete)


def accelerator_words(cat: Catalog, family: str) -> set[str]:
    """The names an accelerated family answers to, lower case: its key (`h100`), its device
    kind (`nvidia`, `neuron`), and the vendor and model of its accelerator's name (`NVIDIA
    H100 80GB SXM`: `nvidia`, `h100`; `AWS Trainium2`: `aws`, `trainium2`)."""
    fam = cat.families[family]
    vendor_model = fam.accelerator.lower().split()[:2]
    return {family.lower(), fam.device_kind.lower(), *vendor_model}


def accelerator_names(cat: Catalog) -> list[str]:
    families = {cat.instances[t].family for t in cat.accelerated_types()}
    return sorted({w for f in families for w in accelerator_words(cat, f)})


def accelerators(incomplete: str) -> list[str]:
    """Accelerator names `instances --accelerator` takes (a `:COUNT` may follow)."""
    cat = _catalog()
    return _matching(accelerator_names(cat) if cat else [], incomplete.lower())
