"""Interruption handling [INT]: EventBridge events about EC2 instances arrive on an SQS
queue; the controller parses them, drains and deletes the affected NodeClaims, and
remembers interrupted spot offerings so replacements go elsewhere. A second poller reads
DescribeInstanceStatus for impaired instances and scheduled events.

Modules: ``messages`` (envelope -> typed message), ``queue`` (the SQS port and the two
ways of receiving: inline for the simulator, a long-poll thread in production),
``controller`` (the reconciler), ``instancestatus`` (the DescribeInstanceStatus poller).
"""
