"""`render --registry`: the rendered jobs pull their images through the stack's ECR pull-through
cache instead of from the upstream registry through the NAT gateway.

A stack with the private registry path (scale.yaml image_delivery.private_registry; resolve's
`profile.private_registry`) has one pull-through cache rule per upstream registry, each with
its repository prefix (naming.cache_prefix, via inventory.registry_cache_rules). An image
`public.ecr.aws/<repository>:<tag>` is pulled through the cache as
`<account>.dkr.ecr.<region>.amazonaws.com/<prefix>/<repository>:<tag>` (the same for a
digest): https://docs.aws.amazon.com/AmazonECR/latest/userguide/pull-through-cache-working.html
("docker pull aws_account_id.dkr.ecr.region.amazonaws.com/ecr-public/repository_name/image_name:tag",
where `ecr-public` is the rule's repository prefix). The registry host is the account's
private registry, `aws_account_id.dkr.ecr.region.amazonaws.com`
(https://docs.aws.amazon.com/AmazonECR/latest/userguide/Registries.html). Images from any other
registry are pulled as written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from accelstack.errors import Problem, SpecError
from accelstack.inventory import registry_cache_rules
from accelstack.resolve import Stack

#: an account's private ECR registry: 12-digit account id, region (e.g. us-east-1, us-gov-west-1)
REGISTRY_RE = r"(\d{12})\.dkr\.ecr\.([a-z]{2}(?:-[a-z]+)+-\d{1,2})\.amazonaws\.com"
OPTION = "--registry"


@dataclass(frozen=True)
class ImageCache:
    """The stack's pull-through cache in its private registry: upstream host -> repository
    prefix (the stack's cache rules)."""

    registry: str
    prefixes: tuple[tuple[str, str], ...]

    def pull(self, image: str) -> str:
        """The reference the nodes pull `image` by: through the cache when its registry is one
        the cache mirrors (repository path and tag or digest kept), else `image` itself."""
        host, _, rest = image.partition("/")
        for upstream, prefix in self.prefixes:
            if rest and host == upstream:
                return f"{self.registry}/{prefix}/{rest}"
        return image

    def note(self, image: str) -> str | None:
        """One line when `image` is left as written (its registry is not cached); None when
        it is pulled through the cache or is in the private registry already."""
        if not image or image.startswith(f"{self.registry}/") or self.pull(image) != image:
            return None
        cached = ", ".join(u for u, _ in self.prefixes)
        return (
            f"image {image} is pulled as written, not through the pull-through cache: the "
            f"stack's cache rules mirror {cached} only"
        )

    def apply(self, stack: Stack) -> Stack:
        """`stack` with its training image pulled through the cache."""
        return stack.with_image(self.pull(stack.image))


def upstream_image(stack: Stack, image: str) -> str:
    """`image` as its upstream registry names it when it is a path of the stack's pull-through
    cache (in any account's registry of the stack's region), else `image`: the identity of
    what runs, the same with or without `--registry` (the pre-compile key hashes it)."""
    m = re.fullmatch(REGISTRY_RE + r"/(.+)", image)
    if m is None or m[2] != stack.region:
        return image
    for rule in registry_cache_rules(stack):
        rest = m[3].removeprefix(f"{rule.prefix}/")
        if rest != m[3]:
            return f"{rule.upstream_url}/{rest}"
    return image


def _refuse(message: str) -> SpecError:
    return SpecError([Problem(OPTION, "", message)])


def image_cache(stack: Stack, registry: str) -> ImageCache:
    """The stack's cache at `registry` (the account's private ECR registry in the spec's
    region); refused in one line for a malformed host, another region, or a stack without
    cache rules."""
    m = re.fullmatch(REGISTRY_RE, registry)
    if m is None:
        raise _refuse(
            f"'{registry}' is not an ECR private registry host "
            "(<12-digit account>.dkr.ecr.<region>.amazonaws.com)"
        )
    if m[2] != stack.region:
        raise _refuse(
            f"'{registry}' is in {m[2]}, the stack is in {stack.region}: its cache rules are "
            f"in the stack's region (use <account>.dkr.ecr.{stack.region}.amazonaws.com)"
        )
    rules = registry_cache_rules(stack)
    if not rules:
        raise _refuse(
            f"stack {stack.name} has no pull-through cache rule (its image pull is not "
            "NAT-bound, or network.ecr_endpoints is off for an existing VPC): render without "
            f"{OPTION}"
        )
    return ImageCache(registry, tuple((r.upstream_url, r.prefix) for r in rules))
