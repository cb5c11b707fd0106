"""The HTML report: analysis + figures of one or more result databases. Never imports torch."""

from paradnn.report.build import Report, Section, build

__all__ = ["Report", "Section", "build"]
