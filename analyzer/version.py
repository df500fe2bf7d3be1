"""The package version (its own module, so that any stage can name it without importing the package)."""

VERSION = "0.1.0"
