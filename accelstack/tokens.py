"""Pulumi type tokens of the resources (and the one lookup) the code reads by type: the plan's
deploy rules, the inventory and the pricers (cost/pricing.py `PRICERS`) name them from here, once. Imports nothing of
accelstack. (The free-types table of cost/pricing.py lists more, as data.)"""

from __future__ import annotations

# EKS
CLUSTER = "aws:eks/cluster:Cluster"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
ADDON = "aws:eks/addon:Addon"
ACCESS_POLICY_ASSOCIATION = "aws:eks/accessPolicyAssociation:AccessPolicyAssociation"
POD_IDENTITY_ASSOCIATION = "aws:eks/podIdentityAssociation:PodIdentityAssociation"
# EC2 and VPC
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
INSTANCE = "aws:ec2/instance:Instance"
FLEET = "aws:ec2/fleet:Fleet"
VPC = "aws:ec2/vpc:Vpc"
CIDR_BLOCK = "aws:ec2/vpcIpv4CidrBlockAssociation:VpcIpv4CidrBlockAssociation"
SUBNET = "aws:ec2/subnet:Subnet"
ROUTE = "aws:ec2/route:Route"
VPC_ENDPOINT = "aws:ec2/vpcEndpoint:VpcEndpoint"
EIP = "aws:ec2/eip:Eip"
NAT_GATEWAY = "aws:ec2/natGateway:NatGateway"
SECURITY_GROUP = "aws:ec2/securityGroup:SecurityGroup"
LEGACY_SECURITY_GROUP_RULE = "aws:ec2/securityGroupRule:SecurityGroupRule"
INGRESS_RULE = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
EGRESS_RULE = "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule"
EBS_VOLUME = "aws:ebs/volume:Volume"
# Storage and keys
LUSTRE = "aws:fsx/lustreFileSystem:LustreFileSystem"
BUCKET = "aws:s3/bucket:Bucket"
BUCKET_V2 = "aws:s3/bucketV2:BucketV2"
BUCKET_PUBLIC_ACCESS_BLOCK = "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock"
KMS_KEY = "aws:kms/key:Key"
# IAM
ROLE = "aws:iam/role:Role"
ROLE_POLICY_ATTACHMENT = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"
# Systems Manager
SSM_DOCUMENT = "aws:ssm/document:Document"
SSM_ASSOCIATION = "aws:ssm/association:Association"
SSM_PARAMETER_LOOKUP = "aws:ssm/getParameter:getParameter"  # an invoke, not a resource
ADDON_VERSION_LOOKUP = "aws:eks/getAddonVersion:getAddonVersion"  # an invoke
# Kubernetes
HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
