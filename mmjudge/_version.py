"""The package version, in a leaf module: signatures read it without importing the package (which
imports the metrics, which import the signature module)."""

__version__ = "0.1.0"
