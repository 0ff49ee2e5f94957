"""The catalog: instance facts, offerings and prices, read from the YAML files beside this module.

Everything downstream (spec validation, plan, components, templates, cost) asks the catalog;
nothing else knows a number about an instance type.

This module is the package's face: it defines nothing and re-exports the names the rest of
accelstack uses. The fact models live in `facts.py`, the loaded `Catalog` in `model.py`, and
reading, caching and checking the files in `load.py`; no module of the package imports from
this one (tests/repo/test_catalog_face.py). It also re-exports the types and errors a catalog
lookup returns or raises, which earlier versions let callers import from here.
"""

from accelstack.catalog.blocks import CapacityBlocks
from accelstack.catalog.facts import (
    PURCHASE_OPTIONS,
    ChartCheck,
    DaemonSetFacts,
    Defaults,
    DeviceKind,
    EksVersion,
    FabricTestFacts,
    FabricTool,
    Family,
    FaultTolerance,
    FlightRecorder,
    Framework,
    HelmChart,
    InstanceType,
    Label,
    LaunchFacts,
    MetricsAddon,
    PodFacts,
    Precision,
    PurchaseOption,
    PythonEnv,
    Quotas,
    Rate,
    RegionOfferings,
    SpotInterruption,
    Taint,
    image_sdk,
    sdk_version,
)
from accelstack.catalog.load import CATALOG_DIR, catalog_file, load_catalog
from accelstack.catalog.model import Catalog
from accelstack.catalog.price_ranges import MissingRange, PriceRange
from accelstack.catalog.purchase import OptionLists, PurchaseOptionFacts
from accelstack.catalog.records import LeftOut, Shape, TrainingRecord
from accelstack.catalog.resilience import ResilienceFacts
from accelstack.catalog.scale import ScaleFacts
from accelstack.catalog.throughput import MfuCurve, StepFamily, Throughput
from accelstack.errors import CatalogError, MissingPrice, UnknownInstanceType

__all__ = [
    "CATALOG_DIR",
    "PURCHASE_OPTIONS",
    "CapacityBlocks",
    "Catalog",
    "CatalogError",
    "ChartCheck",
    "DaemonSetFacts",
    "Defaults",
    "DeviceKind",
    "EksVersion",
    "FabricTestFacts",
    "FabricTool",
    "Family",
    "FaultTolerance",
    "FlightRecorder",
    "Framework",
    "HelmChart",
    "InstanceType",
    "Label",
    "LaunchFacts",
    "LeftOut",
    "MetricsAddon",
    "MfuCurve",
    "MissingPrice",
    "MissingRange",
    "OptionLists",
    "PodFacts",
    "Precision",
    "PriceRange",
    "PurchaseOption",
    "PurchaseOptionFacts",
    "PythonEnv",
    "Quotas",
    "Rate",
    "RegionOfferings",
    "ResilienceFacts",
    "ScaleFacts",
    "Shape",
    "SpotInterruption",
    "StepFamily",
    "Taint",
    "Throughput",
    "TrainingRecord",
    "UnknownInstanceType",
    "catalog_file",
    "image_sdk",
    "load_catalog",
    "sdk_version",
]
