"""django.contrib.admin's app config with our admin site. A module of its own: INSTALLED_APPS imports it
before any model can be, so it must not import the site (which imports forms and models) itself."""

from django.contrib.admin.apps import AdminConfig


class BrainAdminConfig(AdminConfig):
    """Installed in place of "django.contrib.admin": `admin.site` is then the throttled BrainAdminSite."""

    default_site = "projects.views.signin.BrainAdminSite"
