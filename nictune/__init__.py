"""nictune: measure and tune the NIC and network-stack settings of a pair of Linux hosts."""

__version__ = "0.1.0"
__all__ = ["__version__"]
