"""Mail the pages send on a person's request (sign-up links, invitations): a mail server that refuses or cannot be
reached is said on the page, after the write it follows has been kept, instead of an HTML 500 that hid it."""

from __future__ import annotations

import logging
import smtplib

from django.conf import settings
from django.core.mail import send_mail

from brain.logs import log_op

logger = logging.getLogger("projects.mail")


def mail_sent(*, subject: str, body: str, to: str, purpose: str) -> bool:
    """Sends one mail; False, logged with the reason, when the mail server refused it or could not be reached."""
    try:
        send_mail(subject, body, settings.DEFAULT_FROM_EMAIL, [to])
    except (smtplib.SMTPException, OSError) as exc:
        log_op(logger, "mail.send_failed", level=logging.WARNING, purpose=purpose, to=to.split("@")[-1],
               error=type(exc).__name__, reason=str(exc)[:200])
        return False
    return True
