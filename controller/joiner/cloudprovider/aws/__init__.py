"""The AWS cloud provider: boto3 against EC2, SSM, IAM and the Pricing API."""
