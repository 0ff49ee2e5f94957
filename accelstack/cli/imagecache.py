"""`--registry`, shared by `render` and `trial`: the jobs pull public.ecr.aws images through the
stack's ECR pull-through cache (accelstack.render.registry)."""

from __future__ import annotations

from typing import Annotated

import typer

RegistryOpt = Annotated[
    str | None,
    typer.Option(
        "--registry",
        help="the account's private ECR registry (ACCOUNT.dkr.ecr.REGION.amazonaws.com, the "
        "spec's region): the jobs pull public.ecr.aws images through the stack's pull-through "
        "cache (the `imageCache` stack output) instead of through the NAT gateway",
    ),
]
