"""Calibrating a CPU under JAX's XLA backend: synthetic jitted programs, timed with async
dispatch off, each pass in a fresh process, fitted per op class."""
