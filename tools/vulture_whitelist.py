"""Names vulture (`make lint`, config in pyproject.toml [tool.vulture]) reports as unused that
are used where it cannot see: read from YAML by pydantic, called by a framework or a user's
program. Vulture parses this file (never imported): a bare name marks it used anywhere, `_.x`
marks an attribute. A new finding is dead code to delete, or a use to name here with its reason.
"""

# ruff: noqa: B018, F821
# mypy: ignore-errors

# --- catalog and spec fields: declared so the YAML is validated (extra="forbid"), read by
# --- people and by the generated docs, not by code
core_resource  # catalog DeviceKind (instances.yaml device_kinds)
title  # catalog Framework
ranks_note  # catalog Framework
cache_var  # catalog Framework
nccl_net  # catalog Framework
binary  # catalog fabric-test facts (launch.yaml)
min_bytes  # catalog fabric-test facts
max_bytes  # catalog fabric-test facts
iterations  # catalog fabric-test facts
rsh_args  # catalog fabric-test facts: the fabric script's mpirun SSH arguments (template)
rsh_args_source  # catalog fabric-test facts: their source (template comment)
ssh_wait_seconds  # catalog fabric-test facts: the fabric script's sshd wait (template)
offerings_source  # catalog offerings
instance_types_source  # scale.yaml topology_labels
operator_source  # scale.yaml ultraservers placement
end_time_utc  # capacity_blocks.yaml
start_up_to_weeks_ahead  # capacity_blocks.yaml
billing  # purchase_options.yaml
value_as_published  # records.yaml
kv_heads  # records.yaml shapes: the model's shape as published (the step model reads heads)
ffn_hidden_size  # records.yaml shapes
vocab_size  # records.yaml shapes
glu  # records.yaml shapes (the parameter count's MLP form)
shared_expert_hidden_size  # records.yaml shapes
chip_link_source  # instances.yaml families: the source of chip_link_gb_per_s
default_tensor_parallel_source  # throughput.yaml scaling
activation_source  # throughput.yaml layouts
min_context_tokens_source  # throughput.yaml layouts
fsx_source  # resilience.yaml
minutes_per_batch_estimate  # resilience.yaml
adjustable  # scale.yaml
placement_groups_per_region  # scale.yaml
pods_per_node_estimate  # scale.yaml
chart_version  # scale.yaml
topology_labels  # scale.yaml
ultraservers_preview  # scale.yaml
interruptions_source  # throughput.yaml
lost_hours_source  # throughput.yaml
checkpoint_source  # throughput.yaml
purpose  # render Artifact: what a rendered file is for (read in tests and by people)
fsx_gib  # resolve: the checkpoint FSx size, part of the resolved record
Check  # type aliases of the rule registries (resolve/spec_rules.py, resolve/rules.py), kept as docs

requires_source  # instances.yaml fabric tools: the source of each tool's prerequisites
manager_config_source  # instances.yaml kueue chart: where its manager configuration is defined
system_nodes_source  # scale.yaml large_cluster
reservation_source  # scale.yaml placement
max_nodes_per_group_source  # scale.yaml placement
ultraserver_blocks_source  # scale.yaml placement
per_launch_source  # scale.yaml placement
nat_gateway_source  # scale.yaml image_delivery
node_pull_source  # scale.yaml image_delivery
endpoint_source  # scale.yaml image_delivery private_registry
cache_source  # scale.yaml image_delivery private_registry
iam_source  # scale.yaml image_delivery private_registry
sequence_source  # throughput.yaml
min_steps_source  # throughput.yaml calibration
release_pairs_source  # throughput.yaml calibration
fp8_speedup_source  # throughput.yaml calibration
fp8_speedup_pairs  # throughput.yaml calibration: no reader since calibrate's ceiling became the physical bound; the run model's owner keeps or drops it
documentation_networks  # placeholders.yaml shape (catalog/sections.py checks it)
example_accounts  # placeholders.yaml shape
create_before_delete  # replacements.yaml shape
stateful_types  # replacements.yaml shape
PYTORCH_SOURCE  # tests/helpers_upstream.py: the source the restated PyTorchJob fields cite

# --- frameworks and user programs
denylist  # detect-secrets RegexBasedDetector: the plugin's patterns, read by the library
_.preserve_quotes  # ruamel.yaml round-trip setting, read by ruamel
model_ran  # accelstack.trial: called by the user's training script
_.forward  # accelstack/trial/reference.py: torch.nn.Module.__call__ calls each module's forward
_.load_bytecode  # accelstack/render/templatecache.py: jinja2.BytecodeCache, called by Jinja
_.dump_bytecode  # accelstack/render/templatecache.py: jinja2.BytecodeCache, called by Jinja
_.run_in_executor  # accelstack/plan/engine.py _InlineLoop: asyncio's, called by the Pulumi SDK
executor  # its parameter: asyncio's signature (the inline loop runs every call itself)
node_role_arn  # components/nodegroup.py: a Pulumi component output
_.node_role_arn

# --- unused today (found when the check was added): each owner deletes it or uses it after
# --- the merge of the parallel branches; listed so the check passes and catches new ones
_.physical_cores  # catalog InstanceType
_.by_quota_code  # catalog/scale.py
_.units  # catalog/scale.py UltraServer
_.overhead_source  # cost/estimate.py
measured_source  # cost/estimate.py
_.by_category  # cost/pricing.py
