"""The HTML report: analysis + figures of one or more result databases. Never imports torch."""

from paradnn.report.build import Report, build
from paradnn.report.section import Content, Section

__all__ = ["Content", "Report", "Section", "build"]
