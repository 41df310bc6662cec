"""rlgen's verl tools, copied into the training image (``images/training/rlgen_verl_tools``).

Each is a ``verl.tools.base_tool.BaseTool`` subclass registered with ``config.type: native``,
the one tool contract both verl 0.7.1 and verl 0.9.x load (``tool_agent`` creates, executes
and releases an instance per call, passing the row's ``tools_kwargs``). No tool raises into
the rollout: a failure is the tool's answer, which the model reads.
"""
