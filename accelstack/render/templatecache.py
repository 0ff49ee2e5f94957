"""Compiled templates kept in the on-disk cache (accelstack/catalog/cache.py), so a command in a
fresh process renders without compiling the Jinja templates again.

Compiling the templates a plan renders (its deploy rule `pods-schedulable` places every
rendered job) took about a twentieth of `accelstack plan`. Jinja's own `BytecodeCache` contract:
a bucket's code is valid for the template's source checksum and Jinja's bytecode magic (its
version and Python's), both of which `jinja2.bccache.Bucket` checks on load; an entry here is
named by the template and its source checksum, read only from the private cache directory,
written atomically, and any error is a miss.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import jinja2

from accelstack.catalog import cache as disk

if TYPE_CHECKING:
    from jinja2.bccache import Bucket


#: The cache kind of compiled templates, and how many entries are kept: every template of a few
#: checkouts or versions at once (tests/render/test_templatecache.py holds it to 4x the count)
KIND = "template"
KEEP = 80


def _name(bucket: Bucket) -> str:
    """An entry's name: the template (Jinja's key: its name and file) and its source."""
    return f"{bucket.key[:24]}-{bucket.checksum[:24]}"


class TemplateCache(jinja2.BytecodeCache):
    """Jinja bytecode in accelstack's cache directory (`ACCELSTACK_CACHE_DIR=off`: none)."""

    def load_bytecode(self, bucket: Bucket) -> None:
        code = disk.read(_name(bucket), kind=KIND)
        if isinstance(code, bytes):
            bucket.bytecode_from_string(code)  # a wrong magic or checksum leaves it unset

    def dump_bytecode(self, bucket: Bucket) -> None:
        disk.write(_name(bucket), bucket.bytecode_to_string(), kind=KIND, keep=KEEP)
