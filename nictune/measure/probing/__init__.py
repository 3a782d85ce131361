"""What a host supports and what it is, asked before a search.

Which settings a host accepts (:mod:`~nictune.measure.probing.probe`), which knobs of a
search space it cannot apply (:mod:`~nictune.measure.probing.probe_space`), and the host's
fingerprint: kernel, driver, NIC, CPU, NUMA node (:mod:`~nictune.measure.probing.fingerprint`).
"""
