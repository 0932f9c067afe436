"""A POWERCONTEXT_CLIENT_* variable that names no setting fails the client's configuration,
naming the closest setting, as a misspelt POWERCONTEXT_SERVER_* one fails the server's: it
left the client on its default silently (`..._TIMEOUT_SECONDS` for `..._TIMEOUT`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from powercontext.client import ClientSettings
from powercontext.memory.errors import ConfigurationError


def test_a_misspelt_client_variable_names_the_setting_meant(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)  # no .env of the checkout
    monkeypatch.setenv("POWERCONTEXT_CLIENT_TIMEOUT_SECONDS", "5")
    with pytest.raises(ConfigurationError) as raised:
        ClientSettings()
    assert "POWERCONTEXT_CLIENT_TIMEOUT_SECONDS: no such setting" in str(raised.value)
    assert "did you mean POWERCONTEXT_CLIENT_TIMEOUT?" in str(raised.value)
    monkeypatch.delenv("POWERCONTEXT_CLIENT_TIMEOUT_SECONDS")
    (tmp_path / ".env").write_text("POWERCONTEXT_CLIENT_ZZZ=1\n", encoding="utf-8")
    with pytest.raises(ConfigurationError, match=r"POWERCONTEXT_CLIENT_ZZZ \(in \.env\)"):
        ClientSettings()
    (tmp_path / ".env").write_text("POWERCONTEXT_CLIENT_TIMEOUT=7\n", encoding="utf-8")
    assert ClientSettings().timeout == 7
