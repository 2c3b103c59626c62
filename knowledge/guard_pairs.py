"""The built-in labelled set of `brain guard calibrate`: stored forbidden actions (trigger, rule text) and
planned actions that do the forbidden thing. Every action of one pair is a non-match for the other rules,
and the benign actions below match none of them."""

from __future__ import annotations

# (trigger, stored forbidden action, a planned action that does it)
FORBIDDEN: tuple[tuple[str, str, str], ...] = (
    ("git push --force", "Never run git push --force on shared branches; use git push --force-with-lease.",
     "git push --force origin main"),
    ("pnpm install", "Do not use pnpm install in this repo; use npm ci instead.", "pnpm install"),
    ("dist/", "Never edit files under dist/ by hand: they are build output; edit src/ instead.",
     "edit dist/app.bundle.js"),
    ("moment.js", "Do not use moment.js; use dayjs instead.", "npm install moment"),
    (".env", "Never commit .env files: they hold secrets.", "git add .env"),
    ("migrate production", "Do not run database migrations against production from a laptop.",
     "python manage.py migrate --database production"),
    ("rm -rf", "Never rm -rf the repository root or home directory.", "rm -rf ./"),
    ("Formik", "Do not use Formik; use react-hook-form with zod instead.", "npm install formik"),
    ("curl -k", "Never disable TLS certificate verification in HTTP calls.", "curl -k https://api.internal/health"),
    ("--no-verify", "Never skip the pre-commit hooks with --no-verify.", "git commit --no-verify -m wip"),
    ("sudo pip", "Do not sudo pip install; use the project's virtualenv.", "sudo pip install requests"),
    ("git reset --hard", "Never reset main with git reset --hard; revert the commit instead.",
     "git reset --hard origin/main"),
    ("package-lock.json", "Do not edit package-lock.json by hand; let npm install rewrite it.",
     "edit package-lock.json"),
    ("print", "Do not debug with print statements; use the logging module.", "add print(response) to debug"),
    ("docker compose down -v", "Never run docker compose down -v: it deletes the database volumes.",
     "docker compose down -v"),
    ("TRUNCATE", "Never truncate the audit_log table; it is the compliance record.", "psql -c 'TRUNCATE audit_log'"),
    ("chmod 777", "Do not chmod 777 anything; give the service user the access it needs.",
     "chmod -R 777 /var/www"),
    ("jest", "Do not add jest; this repo tests with vitest.", "npm install --save-dev jest"),
)

# Ordinary work that none of the rules above forbids.
BENIGN: tuple[str, ...] = (
    "npm test", "git status", "ls -la src/", "pytest -q tests/unit", "edit src/app.tsx", "git log --oneline -5",
    "cat README.md", "make lint", "edit docs/setup.md", "cargo build --release",
)
