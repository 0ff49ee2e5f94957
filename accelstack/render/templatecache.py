"""Compiled templates kept in the on-disk cache (accelstack/catalog/cache.py), so a command in a
fresh process renders without compiling the Jinja templates again.

Compiling the templates a plan renders (its deploy rule `pods-schedulable` places every
rendered job) took about a twentieth of `accelstack plan`. What compiled code depends on is in
an entry's name: the template (Jinja's bucket key: its name and file), its source checksum, and
the environment that compiled it (`_compiler`: Jinja's release, the lexer and whitespace
options, extensions, filter and test names). Jinja's own load check covers only its bytecode
format and Python's version (`jinja2.bccache.bc_magic`), so an edited environment with
unchanged templates would otherwise get code compiled under the old options. Entries are read
only from the private cache directory, written atomically, and any error is a miss.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

import jinja2

from accelstack.catalog import cache as disk

if TYPE_CHECKING:
    from jinja2.bccache import Bucket


#: The cache kind of compiled templates, and how many entries are kept: every template of a few
#: checkouts or versions at once (tests/render/test_templatecache.py holds it to 4x the count)
KIND = "template"
KEEP = 80


def _compiler(env: jinja2.Environment) -> str:
    """A digest of what, besides the source, decides the code `env` compiles a template to."""
    settings = (
        jinja2.__version__,
        env.block_start_string,
        env.block_end_string,
        env.variable_start_string,
        env.variable_end_string,
        env.comment_start_string,
        env.comment_end_string,
        env.line_statement_prefix,
        env.line_comment_prefix,
        env.trim_blocks,
        env.lstrip_blocks,
        env.newline_sequence,
        env.keep_trailing_newline,
        env.optimized,
        repr(env.autoescape),
        repr(env.undefined),
        sorted(env.extensions),
        sorted(env.filters),
        sorted(env.tests),
    )
    return hashlib.sha256(repr(settings).encode()).hexdigest()[:16]


def _name(bucket: Bucket) -> str:
    """An entry's name: the template (Jinja's key: its name and file), its source, and the
    environment that compiles it."""
    return f"{bucket.key[:24]}-{bucket.checksum[:24]}-{_compiler(bucket.environment)}"


class TemplateCache(jinja2.BytecodeCache):
    """Jinja bytecode in accelstack's cache directory (`ACCELSTACK_CACHE_DIR=off`: none)."""

    def load_bytecode(self, bucket: Bucket) -> None:
        code = disk.read(_name(bucket), kind=KIND)
        if isinstance(code, bytes):
            bucket.bytecode_from_string(code)  # a wrong magic or checksum leaves it unset

    def dump_bytecode(self, bucket: Bucket) -> None:
        disk.write(_name(bucket), bucket.bytecode_to_string(), kind=KIND, keep=KEEP)
