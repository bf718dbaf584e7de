"""Settings edited in the IDE: pulled after initialized and on every change, bad values refused."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types

from .harness import NEOVIM, VSCODE, start_daemon


async def test_settings_are_pulled_and_follow_changes(profile: str, storage: Path) -> None:
    configuration = {"compression": {"strategy": "top-down-truncation"}, "contextLimit": 120000}
    init = {"contextLimit": 90000, "compression.preserveThreshold": 0.4}
    async with start_daemon(
        storage, profile=profile, init_settings=init, configuration=configuration
    ) as d:
        status = await d.call("history/open", {"sessionId": "s"})
        assert status["strategy"] == "top-down-truncation"
        assert status["contextLimit"] == 120000  # pulled wins over initializationOptions
        settings = await d.call("history/settings", {"sessionId": "s"})
        assert settings["sources"]["compression.strategy"] == "settings"
        # PROTOCOL.md: pulled, else initializationOptions. Once a section is pulled, a key it
        # lacks is the user's default, not a leftover of the start-up options.
        assert settings["values"]["compression.preserveThreshold"] == 0.3
        assert settings["sources"]["compression.preserveThreshold"] == "default"
        assert settings["sources"]["compression.threshold"] == "default"
        assert settings["values"]["compression.threshold"] == 0.85

        registered = [r.method for r in d.registrations]
        if profile == VSCODE:  # it allows dynamic registration; Neovim does not
            assert types.WORKSPACE_DID_CHANGE_CONFIGURATION in registered
            config = next(
                r for r in d.registrations if r.method == types.WORKSPACE_DID_CHANGE_CONFIGURATION
            )
            assert config.register_options == {"section": "hdcontext"}
        else:
            assert types.WORKSPACE_DID_CHANGE_CONFIGURATION not in registered

        # The user edits settings: dotted keys this time, one good value, one bad.
        d.client.set_configuration(
            {"compression.strategy": "middle-out", "contextLimit": "huge"}, section="hdcontext"
        )
        notified = len(d.tokens)
        d.client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings=None)
        )
        settings = await d.call("history/settings", {"sessionId": "s"})
        assert settings["values"]["compression.strategy"] == "middle-out"
        assert settings["values"]["contextLimit"] == 120000  # the previous value stands
        warning = next(w for w in d.warnings() if "contextLimit" in w)
        assert '"huge"' in warning and "a positive integer" in warning
        assert len(d.tokens) == notified + 1  # the status bar hears of the change
        assert d.tokens[-1]["strategy"] == "middle-out"

        # A session override beats the IDE setting; removing it brings the setting back.
        await d.call(
            "history/setOverride", {"sessionId": "s", "key": "contextLimit", "value": 8000}
        )
        status = (await d.call("history/get", {"sessionId": "s"}))["status"]
        assert status["contextLimit"] == 8000 and d.tokens[-1]["contextLimit"] == 8000
        await d.call(
            "history/setOverride", {"sessionId": "s", "key": "contextLimit", "value": None}
        )
        settings = await d.call("history/settings", {"sessionId": "s"})
        assert settings["values"]["contextLimit"] == 120000
        assert settings["sources"]["contextLimit"] == "settings"

        # The user removes the key in the IDE: it returns to its default (not to the
        # start-up options' 90000, nor to the last pulled 120000).
        d.client.set_configuration({"compression.strategy": "middle-out"}, section="hdcontext")
        d.client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings=None)
        )
        settings = await d.call("history/settings", {"sessionId": "s"})
        assert settings["values"]["contextLimit"] == 200000
        assert settings["sources"]["contextLimit"] == "default"


async def test_bad_initialization_settings_warn_and_keep_defaults(storage: Path) -> None:
    async with start_daemon(
        storage, init_settings={"compression.threshold": 3, "watch.enabled": "yes"}
    ) as d:
        await d.call("history/open", {"sessionId": "s"})
        settings = await d.call("history/settings", {"sessionId": "s"})
        assert settings["values"]["compression.threshold"] == 0.85
        assert settings["values"]["watch.enabled"] is True
        warnings = " | ".join(d.warnings())
        assert "compression.threshold" in warnings and "(0, 1]" in warnings
        assert "watch.enabled" in warnings and "a boolean" in warnings


async def test_a_client_that_cannot_be_asked_pushes_its_settings(storage: Path) -> None:
    # Neovim 0.7 declares no workspace/configuration: settings come from initializationOptions
    # and from the settings pushed in workspace/didChangeConfiguration.
    async with start_daemon(
        storage, profile=f"{NEOVIM}@v0.7.0", init_settings={"contextLimit": 70000}
    ) as d:
        status = await d.call("history/open", {"sessionId": "s"})
        assert status["contextLimit"] == 70000
        pushed = {"hdcontext": {"contextLimit": 60000, "compression": {"threshold": 2}}}
        d.client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings=pushed)
        )
        settings = await d.call("history/settings", {"sessionId": "s"})
        assert settings["values"]["contextLimit"] == 60000
        assert settings["values"]["compression.threshold"] == 0.85
        assert any("compression.threshold" in w for w in d.warnings())
        assert d.tokens[-1]["contextLimit"] == 60000


async def test_bad_masking_settings_warn_and_change_nothing(storage: Path) -> None:
    init = {"compression.density.masking": "sometimes", "compression.density.maskRetention": -1}
    async with start_daemon(storage, init_settings=init) as d:
        await d.call("history/open", {"sessionId": "s"})
        settings = await d.call("history/settings", {"sessionId": "s"})
        assert settings["values"]["compression.density.masking"] == "cold"
        assert settings["values"]["compression.density.maskRetention"] == 3
        warnings = " | ".join(d.warnings())
        assert '"sometimes"' in warnings and "one of off, cold, always" in warnings
        assert "maskRetention" in warnings and "an integer >= 0" in warnings

        # A good value applies; a bad one after it leaves it standing.
        for value in ("always", "never"):
            d.client.set_configuration(
                {"compression": {"density": {"masking": value, "maskRetention": 0}}},
                section="hdcontext",
            )
            d.client.workspace_did_change_configuration(
                types.DidChangeConfigurationParams(settings=None)
            )
            settings = await d.call("history/settings", {"sessionId": "s"})
            assert settings["values"]["compression.density.masking"] == "always"
            assert settings["values"]["compression.density.maskRetention"] == 0
        assert any('"never"' in w for w in d.warnings())
        err = await d.fails(
            "history/setOverride",
            {"sessionId": "s", "key": "compression.density.maskRetention", "value": -2},
        )
        assert err.code == -32602 and "maskRetention" in err.message
