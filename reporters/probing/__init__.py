"""``reporters.probing``: tasks with verifiable answers, for probing agents (docs/probing.md).

Pure and importable on its own (it needs only ``blake3``): the prober
(``bureau-reporter probe``), the accuracy benchmark and the simulation draw the same
tasks from it::

    from reporters.probing import batch
    for task in batch(epoch=20458, seed=my_secret_seed):
        reply = ask(task.text)
        passed = task.check(reply)
"""

from reporters.probing.answers import Answer, check_reply
from reporters.probing.tasks import DEFAULT_BATCH_SIZE, GENERATOR, KINDS, ProbeTask, batch, task

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "GENERATOR",
    "KINDS",
    "Answer",
    "ProbeTask",
    "batch",
    "check_reply",
    "task",
]
