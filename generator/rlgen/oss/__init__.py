"""Alibaba Cloud OSS and STS, as rlgen data and rlgen doctor talk to them: credentials from the
environment, the SDK client with its timeouts and deadline."""
