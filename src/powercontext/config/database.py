"""DatabaseConfig (POWERCONTEXT_SERVER_DATABASE_*): which store Memory lives in."""

from __future__ import annotations

from pydantic import field_validator

from powercontext.config.environment import SettingsGroup, data_home


class DatabaseConfig(SettingsGroup):
    url: str | None = None
    """`sqlite:///path.db`, `sqlite:///:memory:` or `postgresql://...`; default a SQLite file
    under POWERCONTEXT_HOME."""

    @field_validator("url")
    @classmethod
    def _known_scheme(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if not value.startswith(("sqlite:///", "postgresql://", "postgres://")):
            raise ValueError("use sqlite:///PATH or postgresql://...")
        return value

    def resolved_url(self) -> str:
        if self.url:
            return self.url
        return f"sqlite:///{data_home() / 'powercontext.db'}"
