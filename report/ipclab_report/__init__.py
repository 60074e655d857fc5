"""Reporting side of ipclab: load result JSON, render HTML/Markdown reports, compare runs."""

__version__ = "0.1.0"
