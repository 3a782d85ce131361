"""One trial on real hosts, and what keeps the hosts safe around it.

The transaction (:mod:`~nictune.measure.trial.transaction`: validate, journal, snapshot,
apply, verify, measure, restore), the crash journal replayed after a crash
(:mod:`~nictune.measure.trial.journal`), the machine locks (:mod:`~nictune.measure.trial.locks`),
the signal guard that turns SIGINT/SIGTERM into a restore (:mod:`~nictune.measure.trial.signals`),
keeping a configuration applied after the trial (:mod:`~nictune.measure.trial.keep`), and the
dry run that plans the same trial without changing anything (:mod:`~nictune.measure.trial.dryrun`;
its result types are in :mod:`nictune.measure.planning`).
"""
