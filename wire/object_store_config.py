"""An object store's settings from its cloud's standard environment and config files (the
client's ``poolq enqueue s3://...`` listing and the workers' fetches read them alike; the
standard library only).

obstore reads the environment itself (for S3: ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
``AWS_SESSION_TOKEN``, ``AWS_REGION``/``AWS_DEFAULT_REGION``, ``AWS_ENDPOINT_URL``; for GCS
``GOOGLE_SERVICE_ACCOUNT``/``GOOGLE_APPLICATION_CREDENTIALS``; for Azure
``AZURE_STORAGE_ACCOUNT_NAME``, ``AZURE_STORAGE_ACCOUNT_KEY`` and the rest). This adds what it
does not read: an AWS profile (``AWS_PROFILE``, default ``default``) from
``~/.aws/credentials`` and ``~/.aws/config`` (or ``AWS_SHARED_CREDENTIALS_FILE`` and
``AWS_CONFIG_FILE``) when the keys are not in the environment, and plain ``http://``
endpoints (a local MinIO at ``AWS_ENDPOINT_URL=http://127.0.0.1:9000``) with no other setting.

What this returns holds secrets: it is handed to the object store client and never logged, printed or stored.
"""

from __future__ import annotations

import configparser
import os
from pathlib import Path

ENDPOINT_VARIABLES = ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AWS_ENDPOINT")


def _profile_sections(path: Path, profile: str, *, config_file: bool) -> dict[str, str]:
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read(path, encoding="utf-8")
    except (OSError, configparser.Error):
        return {}
    names = [profile] if not config_file else [f"profile {profile}", profile]
    for name in names:
        if parser.has_section(name):
            return dict(parser.items(name))
    return {}


def s3_config(env: dict[str, str] | None = None) -> dict[str, str]:
    """obstore ``S3Config`` keys that the environment alone would not give."""
    env = dict(os.environ) if env is None else env
    home = Path(env.get("HOME", str(Path.home())))
    profile = env.get("AWS_PROFILE") or env.get("AWS_DEFAULT_PROFILE") or "default"
    out: dict[str, str] = {}
    if not env.get("AWS_ACCESS_KEY_ID"):
        creds = Path(env.get("AWS_SHARED_CREDENTIALS_FILE") or home / ".aws" / "credentials")
        found = _profile_sections(creds, profile, config_file=False)
        if found.get("aws_access_key_id") and found.get("aws_secret_access_key"):
            out["access_key_id"] = found["aws_access_key_id"]
            out["secret_access_key"] = found["aws_secret_access_key"]
            if found.get("aws_session_token"):
                out["token"] = found["aws_session_token"]
    config = Path(env.get("AWS_CONFIG_FILE") or home / ".aws" / "config")
    conf = _profile_sections(config, profile, config_file=True)
    if not (env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")) and conf.get("region"):
        out["region"] = conf["region"]
    endpoint = next((env[v] for v in ENDPOINT_VARIABLES if env.get(v)), conf.get("endpoint_url"))
    if endpoint:
        out["endpoint"] = endpoint
    return out


def allows_http(config: dict[str, str], env: dict[str, str] | None = None) -> bool:
    """An ``http://`` endpoint is used as given (no ``AWS_ALLOW_HTTP`` needed)."""
    env = dict(os.environ) if env is None else env
    endpoint = config.get("endpoint") or env.get("GOOGLE_CLOUD_STORAGE_ENDPOINT", "")
    return endpoint.startswith("http://") or env.get("AZURE_STORAGE_USE_EMULATOR") == "true"
