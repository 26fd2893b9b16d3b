#!/usr/bin/env python3
"""Drives portal-service in headless Chromium as an officer would.

Run by deploy/local/browser-test.sh (make test-browser, and so make test) against a portal, verification- and
test-result-service on throw-away databases. The flow:

  0. with --local-risk-screenshot (the user also has role venue_officer): log in, and on /local-risk upload a CSV of
     risky venues with a bad row through the file input; the preview (HTTP 422) checks every row, names the bad
     row's problem and offers no confirmation; a screenshot of it is saved; a corrected file previews with the
     confirmation button (HTTP 200). Nothing is published (the confirmation is the e2e test's). Log out;
  1. log in with user name and password, then with the TOTP code this script computes from the otpauth:// URI
     (RFC 6238: HMAC-SHA1, 30-second steps, 6 digits);
  2. on the start page, issue a TEST teleTAN; the result page shows it (10 characters), its validity and a link back,
     and is sent with Cache-Control: no-store;
  3. register the teleTAN at verification-service's app API (HTTP 201 with a registration token);
  4. issue a second teleTAN within 30 s and get the rate-limit page (HTTP 429) with the seconds to wait;
  5. log out (back on the login page), then press the browser's back button step by step: no page may show the
     teleTAN again.

It saves a screenshot of the result page (--screenshot; on a failure, one of the failing page beside it with
"-failure" in its name), prints how long the officer took from opening the login page to seeing the teleTAN, and
exits 1 with one message naming the failed check (2 for bad arguments). `--self-test` checks the TOTP code against
RFC 6238's test vectors and needs no browser.

Page contract (ids and names the portal's templates use):
  GET /login   form#login: input[name=username], input[name=password], hidden input[name=csrf], button#login-submit;
               a correct password redirects to /totp (a wrong one shows #error on the login page)
  GET /totp    form#totp: input[name=code], hidden csrf, button#totp-submit; a correct code redirects to /
  GET /        #user (the user name); role c19hotline: form#teletan-test (POST /teletan) with button#issue-test;
               role c19hotline_event: form#teletan-event with select[name=authority] and button#issue-event;
               form#logout with button#logout-submit
  POST /teletan  200: #teletan (the teleTAN), #validity, a#back to /, Cache-Control: no-store;
               429 within 30 s of the officer's last one: #rate-limited holding the seconds to wait
  GET /local-risk  role venue_officer: form#upload-risky-venues (multipart POST /local-risk/preview) with
               input#file-risky-venues (type file) and a submit button
  POST /local-risk/preview  #entries, #problems, one tr#row-N per row (class good or bad, the last cell the check),
               button#confirm when every row is valid, #not-publishable otherwise
  POST /logout redirects to /login
"""

import argparse
import base64
import hashlib
import hmac
import json
import os
import re
import struct
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

WAIT_SECONDS = 20          # for any element or navigation; generous for a loaded 2-core machine
RATE_LIMIT_SECONDS = 30    # the portal's TELETAN_USER_INTERVAL
TELETAN_PATTERN = re.compile(r"^[23456789ABCDEFGHJKMNPQRSTUVWXYZ]{10}$")   # cwa-satellites §1.3


class CheckFailed(Exception):
    """A check of the flow failed; the message says which and what was seen instead."""


# ------------------------------------------------------------------------------------------------------------ TOTP

def totp_secret_from_uri(uri):
    """The shared secret (bytes) of an otpauth://totp/ URI; refuses parameters other than SHA1, 6 digits, 30 s."""
    parts = urllib.parse.urlsplit(uri)
    if parts.scheme != "otpauth" or parts.netloc != "totp":
        raise ValueError("not an otpauth://totp/ URI")
    query = urllib.parse.parse_qs(parts.query)
    for name, expected in (("algorithm", "SHA1"), ("digits", "6"), ("period", "30")):
        value = query.get(name, [expected])[0]
        if value.upper() != expected:
            raise ValueError(f"the URI asks for {name}={value}; this test computes {name}={expected} only")
    secret = query.get("secret", [""])[0].replace(" ", "").upper()
    if not secret:
        raise ValueError("the URI has no secret")
    try:
        return base64.b32decode(secret + "=" * (-len(secret) % 8))
    except (ValueError, TypeError) as error:
        raise ValueError("the secret is not base32") from error


def totp(secret, at_time, digits=6, period=30):
    """RFC 6238 TOTP with HMAC-SHA1 (RFC 4226's dynamic truncation) for the step holding at_time (Unix seconds)."""
    counter = int(at_time) // period
    digest = hmac.new(secret, struct.pack(">Q", counter), hashlib.sha1).digest()
    offset = digest[-1] & 0x0F
    number = struct.unpack(">I", digest[offset:offset + 4])[0] & 0x7FFFFFFF
    return str(number % 10 ** digits).zfill(digits)


def self_test():
    """RFC 6238 appendix B, SHA-1 rows (secret ASCII "12345678901234567890", 8 digits), and their 6-digit tails."""
    secret = b"12345678901234567890"
    vectors = [(59, "94287082"), (1111111109, "07081804"), (1111111111, "14050471"),
               (1234567890, "89005924"), (2000000000, "69279037"), (20000000000, "65353130")]
    failures = 0
    for at_time, expected in vectors:
        for digits in (8, 6):
            got = totp(secret, at_time, digits=digits)
            if got != expected[-digits:]:
                print(f"portal_flow: TOTP T={at_time} digits={digits}: expected {expected[-digits:]}, got {got}")
                failures += 1
    uri = "otpauth://totp/CWA%20Portal:x?secret=" + base64.b32encode(secret).decode().rstrip("=") + "&digits=6"
    if totp(totp_secret_from_uri(uri), 59) != "287082":
        print("portal_flow: the secret parsed from an otpauth URI gives the wrong code")
        failures += 1
    print(f"portal_flow: TOTP self-test {'failed' if failures else 'ok'} ({len(vectors) * 2 + 1} checks)")
    return 1 if failures else 0


# ------------------------------------------------------------------------------------------------------ verification

def register_teletan(verification_url, teletan):
    """POST the teleTAN to verification-service's registrationToken route; 201 with a token, or CheckFailed."""
    request = urllib.request.Request(
        verification_url.rstrip("/") + "/version/v1/registrationToken",
        data=json.dumps({"key": teletan, "keyType": "TELETAN"}).encode(),
        headers={"Content-Type": "application/json", "Accept": "application/json"},
        method="POST")
    try:
        with urllib.request.urlopen(request, timeout=WAIT_SECONDS) as response:
            status, body = response.status, response.read()
    except urllib.error.HTTPError as error:
        status, body = error.code, error.read()
    except (urllib.error.URLError, OSError) as error:
        raise CheckFailed(f"verification-service at {verification_url} did not answer: {error}") from error
    if status != 201:
        raise CheckFailed(f"verification-service did not register the teleTAN: HTTP {status} {body[:200]!r}")
    try:
        token = json.loads(body).get("registrationToken")
    except (ValueError, AttributeError):
        token = None
    if not isinstance(token, str) or not token:
        raise CheckFailed(f"verification-service answered 201 without a registrationToken: {body[:200]!r}")


# ----------------------------------------------------------------------------------------------------------- browser

def start_browser(chromium, chromedriver):
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = chromium
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,900",
                     "--lang=en-US"):
        options.add_argument(argument)
    # No password-manager bubbles over the forms; nothing leaves the machine.
    options.add_experimental_option("prefs", {"credentials_enable_service": False,
                                              "profile.password_manager_enabled": False,
                                              "profile.password_manager_leak_detection": False})
    # The performance log carries each response's status and headers, which WebDriver does not show otherwise.
    options.set_capability("goog:loggingPrefs", {"performance": "ALL"})
    # Both paths are given, so Selenium Manager has nothing to look up or download.
    return webdriver.Chrome(service=Service(executable_path=chromedriver), options=options)


class DocumentResponses:
    """Status and headers of the page loads, read from Chromium's performance log."""

    def __init__(self, driver):
        self.driver = driver
        self.seen = []

    def drain(self):
        for entry in self.driver.get_log("performance"):
            message = json.loads(entry["message"]).get("message", {})
            params = message.get("params", {})
            if message.get("method") != "Network.responseReceived" or params.get("type") != "Document":
                continue
            response = params.get("response", {})
            headers = {name.lower(): value for name, value in response.get("headers", {}).items()}
            self.seen.append((urllib.parse.urlsplit(response.get("url", "")).path, response.get("status"), headers))

    def forget(self):
        self.drain()
        self.seen = []

    def latest(self, path):
        """(status, headers) of the newest load of path since the last forget(); waits briefly for the log."""
        from selenium.common.exceptions import TimeoutException
        from selenium.webdriver.support.ui import WebDriverWait

        def find(_):
            self.drain()
            return next(((status, headers) for seen_path, status, headers in reversed(self.seen) if seen_path == path),
                        None)
        try:
            return WebDriverWait(self.driver, 5).until(find)
        except TimeoutException:
            raise CheckFailed(f"Chromium's network log shows no response for {path}") from None


class PortalFlow:
    def __init__(self, driver, args):
        from selenium.webdriver.support.ui import WebDriverWait

        self.driver = driver
        self.args = args
        self.portal = args.portal.rstrip("/")
        self.wait = WebDriverWait(driver, WAIT_SECONDS)
        self.responses = DocumentResponses(driver)
        self.checks = 0

    # ---- helpers

    def ok(self, what):
        self.checks += 1
        print(f"portal_flow: ok  {what}", flush=True)

    def path(self):
        return urllib.parse.urlsplit(self.driver.current_url).path

    def describe(self):
        """Where the browser is, for failure messages: URL, title and any error text of the portal's pages."""
        from selenium.webdriver.common.by import By
        texts = [element.text.strip() for element in
                 self.driver.find_elements(By.CSS_SELECTOR, "#error, #error-message, #rate-limited")]
        text = "; ".join(t for t in texts if t)
        return f"{self.driver.current_url} (title {self.driver.title!r}{'; ' + text if text else ''})"

    def find(self, css, what=None):
        """The element matching css, waiting for it; CheckFailed naming what is missing."""
        from selenium.common.exceptions import TimeoutException
        from selenium.webdriver.common.by import By
        from selenium.webdriver.support import expected_conditions as EC
        try:
            return self.wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, css)))
        except TimeoutException:
            raise CheckFailed(f"{what or css} did not appear within {WAIT_SECONDS} s at {self.describe()}") from None

    def within(self, element, css, what):
        from selenium.common.exceptions import NoSuchElementException
        from selenium.webdriver.common.by import By
        try:
            return element.find_element(By.CSS_SELECTOR, css)
        except NoSuchElementException:
            raise CheckFailed(f"{what} ({css}) is missing at {self.describe()}") from None

    def submit(self, button, outcomes, what):
        """Clicks button, waits for the next page, returns the name of the first of outcomes {name: css} present."""
        from selenium.common.exceptions import StaleElementReferenceException, TimeoutException, WebDriverException
        from selenium.webdriver.common.by import By
        button.click()

        # During the navigation Chromium may answer a lookup with "Node with given id does not belong to the
        # document" instead of "stale element" (seen once in CI; EC.staleness_of knows only the latter): both mean
        # the old page is gone, and a lookup on the new one is simply tried again.
        def navigating(error):
            return isinstance(error, StaleElementReferenceException) or "does not belong to the document" in str(error)

        def left_page(_):
            try:
                button.is_enabled()
                return False
            except WebDriverException as error:
                if navigating(error):
                    return True
                raise

        def outcome(driver):
            try:
                return next((name for name, css in outcomes.items() if driver.find_elements(By.CSS_SELECTOR, css)), None)
            except WebDriverException as error:
                if navigating(error):
                    return None
                raise

        try:
            self.wait.until(left_page)
            return self.wait.until(outcome)
        except TimeoutException:
            raise CheckFailed(f"after {what}, none of {sorted(outcomes)} appeared within {WAIT_SECONDS} s; "
                              f"the browser is at {self.describe()}") from None

    def check_csrf(self, form, what):
        field = self.within(form, "input[name=csrf]", f"the CSRF field of {what}")
        if field.get_attribute("type") != "hidden" or not field.get_attribute("value"):
            raise CheckFailed(f"the CSRF field of {what} is not a filled hidden input")

    def wait_loaded(self):
        self.wait.until(lambda d: d.execute_script("return document.readyState") == "complete")

    # ---- the steps

    def login(self, secret, step_offset=0):
        from selenium.webdriver.common.by import By
        driver = self.driver
        driver.get(self.portal + "/login")
        form = self.find("form#login", "the login form")
        self.check_csrf(form, "the login form")
        self.within(form, "input[name=username]", "the user name field").send_keys(self.args.username)
        self.within(form, "input[name=password]", "the password field").send_keys(self.args.password)
        outcome = self.submit(self.within(form, "button#login-submit", "the login button"),
                              {"totp": "form#totp", "refused": "form#login"}, "submitting the password")
        if outcome != "totp" or self.path() != "/totp":
            raise CheckFailed(f"the password did not lead to /totp: {self.describe()}")
        self.ok("password accepted, redirected to /totp")

        form = driver.find_element(By.CSS_SELECTOR, "form#totp")
        self.check_csrf(form, "the TOTP form")
        # Each login uses its own step's code once (the portal accepts the previous and next step too, so a step
        # boundary during the submission is harmless, and a second login within a step takes the next step's code).
        self.within(form, "input[name=code]", "the code field").send_keys(
            totp(secret, time.time() + 30 * step_offset))
        outcome = self.submit(self.within(form, "button#totp-submit", "the code button"),
                              {"start": "#user", "refused": "form#totp"}, "submitting the TOTP code")
        if outcome != "start" or self.path() != "/":
            raise CheckFailed(f"the TOTP code did not lead to the start page /: {self.describe()}")
        shown = driver.find_element(By.CSS_SELECTOR, "#user").text
        if self.args.username not in shown:
            raise CheckFailed(f"#user shows {shown!r}, not the user name {self.args.username!r}")
        self.ok(f"TOTP code accepted, start page / shows the user {self.args.username}")

    def check_start_page(self):
        """The forms the user's roles allow, and the logout form; returns the TEST button."""
        from selenium.webdriver.common.by import By
        test_form = self.find("form#teletan-test", "the TEST teleTAN form (role c19hotline)")
        self.check_csrf(test_form, "the TEST teleTAN form")
        action = urllib.parse.urlsplit(test_form.get_attribute("action") or "").path
        method = (test_form.get_attribute("method") or "").lower()
        if action != "/teletan" or method != "post":
            raise CheckFailed(f"form#teletan-test sends {method.upper() or 'GET'} {action or '(no action)'}, "
                              f"not POST /teletan")
        button = self.within(test_form, "button#issue-test", "the TEST teleTAN button")
        if self.args.check_event_form:
            event_form = self.find("form#teletan-event", "the EVENT teleTAN form (role c19hotline_event)")
            self.check_csrf(event_form, "the EVENT teleTAN form")
            authority = self.within(event_form, "select[name=authority]", "the health-authority picker")
            choices = [o for o in authority.find_elements(By.TAG_NAME, "option") if o.get_attribute("value")]
            if not choices:
                raise CheckFailed("the health-authority picker of form#teletan-event offers no authority")
            self.within(event_form, "button#issue-event", "the EVENT teleTAN button")
        logout = self.find("form#logout", "the logout form")
        self.check_csrf(logout, "the logout form")
        self.within(logout, "button#logout-submit", "the logout button")
        self.ok("start page has the TEST form" + (", the EVENT form with authorities" if self.args.check_event_form
                                                  else "") + " and the logout form")
        return button

    def issue_first(self, button):
        """Issues a TEST teleTAN and returns the text of #teletan (check_result_page checks it)."""
        from selenium.webdriver.common.by import By
        self.responses.forget()
        outcome = self.submit(button, {"teletan": "#teletan", "rate-limited": "#rate-limited"},
                              "asking for a TEST teleTAN")
        if outcome != "teletan":
            raise CheckFailed(f"the first teleTAN was refused: {self.describe()}")
        return self.driver.find_element(By.CSS_SELECTOR, "#teletan").text.strip()

    def check_result_page(self, teletan):
        if not TELETAN_PATTERN.match(teletan):
            raise CheckFailed(f"#teletan shows {len(teletan)} characters {teletan!r}, not a teleTAN "
                              "(10 characters of 23456789ABCDEFGHJKMNPQRSTUVWXYZ)")
        validity = self.find("#validity", "the validity (#validity)").text.strip()
        if not validity:
            raise CheckFailed("#validity is empty")
        back = self.find("a#back", "the link back to the start page (a#back)")
        if urllib.parse.urlsplit(back.get_attribute("href") or "").path != "/":
            raise CheckFailed(f"a#back leads to {back.get_attribute('href')!r}, not /")
        status, headers = self.responses.latest("/teletan")
        if status != 200:
            raise CheckFailed(f"the result page came with HTTP {status}, not 200")
        cache_control = headers.get("cache-control", "")
        if "no-store" not in cache_control.lower():
            raise CheckFailed(f"the result page came with Cache-Control {cache_control!r}, not no-store")
        self.ok(f"result page: a 10-character teleTAN, valid until {validity!r}, HTTP 200, Cache-Control: "
                f"{cache_control}")

    def issue_second(self, issued_at):
        from selenium.webdriver.common.by import By
        self.submit(self.find("a#back", "a#back"), {"start": "#issue-test"}, "following a#back")
        if self.path() != "/":
            raise CheckFailed(f"a#back did not lead to the start page: {self.describe()}")
        elapsed = time.monotonic() - issued_at
        if elapsed > RATE_LIMIT_SECONDS - 3:
            raise CheckFailed(f"{elapsed:.1f} s passed since the first teleTAN, too close to the portal's "
                              f"{RATE_LIMIT_SECONDS}-s interval for the rate-limit check to mean anything")
        self.responses.forget()
        outcome = self.submit(self.driver.find_element(By.CSS_SELECTOR, "#issue-test"),
                              {"rate-limited": "#rate-limited", "teletan": "#teletan"},
                              "asking for a second teleTAN")
        if outcome != "rate-limited":
            raise CheckFailed(f"a second teleTAN {elapsed:.1f} s after the first was issued, not rate-limited")
        text = self.driver.find_element(By.CSS_SELECTOR, "#rate-limited").text
        numbers = [int(n) for n in re.findall(r"\d+", text)]
        if not any(1 <= n <= RATE_LIMIT_SECONDS for n in numbers):
            raise CheckFailed(f"#rate-limited does not say how many seconds (1-{RATE_LIMIT_SECONDS}) to wait: "
                              f"{text!r}")
        status, _ = self.responses.latest("/teletan")
        if status != 429:
            raise CheckFailed(f"the rate-limit page came with HTTP {status}, not 429")
        self.ok(f"second teleTAN {elapsed:.1f} s after the first: HTTP 429, #rate-limited says {text.strip()!r}")

    def logout(self, teletan):
        from selenium.webdriver.common.by import By
        buttons = self.driver.find_elements(By.CSS_SELECTOR, "form#logout button#logout-submit")
        if not buttons:   # the rate-limit page need not carry the logout form; the start page does
            self.driver.get(self.portal + "/")
            buttons = [self.find("form#logout button#logout-submit", "the logout button")]
        self.submit(buttons[0], {"login": "form#login"}, "logging out")
        if self.path() != "/login":
            raise CheckFailed(f"logging out did not lead to /login: {self.describe()}")
        if teletan and teletan in self.driver.page_source:
            raise CheckFailed("the login page after logout contains the teleTAN")
        self.ok("logged out, redirected to /login")

    def back_button(self, teletan, steps=4):
        """Back through the history (429 page, start page, result page, ...): the teleTAN must never come back."""
        from selenium.common.exceptions import WebDriverException
        seen = []
        for step in range(1, steps + 1):
            before = self.driver.current_url
            try:
                self.driver.back()
            except WebDriverException as error:   # e.g. a POST entry that may not be resubmitted
                seen.append(f"{step}: {error.msg.splitlines()[0] if error.msg else type(error).__name__}")
            self.wait_loaded()
            source = self.driver.page_source
            seen.append(f"{step}: {self.driver.current_url}")
            if teletan in source:
                raise CheckFailed(f"back button, step {step} (from {before}): the page at {self.driver.current_url} "
                                  "shows the teleTAN again")
        self.ok(f"back button {steps} times after logout, the teleTAN never shown ({', '.join(seen)})")

    def local_risk(self, screenshot):
        """A venue officer's preview of a CSV with one bad row (screenshot), then of the corrected file."""
        import tempfile
        from selenium.webdriver.common.by import By
        day = time.strftime("%Y-%m-%d", time.gmtime(time.time() - 3 * 86400))
        rows = [f'"C5MPR2X9", "{day}T18:00:00Z", "{day}T21:30:00Z", "M1", ""',
                f'"4WT59M5Y", "{day}T09:00:00Z", "{day}T11:00:00Z", "M2", ""',
                f'"HJK3", "{day}T12:00:00Z", "{day}T14:00:00Z", "M2", ""',
                f'"AB1", "{day}T12:00:00Z", "{day}T14:00:00Z", "M1", ""']
        header = "# venue_id, start_time, end_time, message_type, optional_parameter"

        def preview(lines, expected_status):
            with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as file:
                file.write("\n".join([header] + lines) + "\n")
            try:
                self.driver.get(self.portal + "/local-risk")
                form = self.find("form#upload-risky-venues", "the risky venues' upload form (role venue_officer)")
                self.check_csrf(form, "the risky venues' upload form")
                if (form.get_attribute("enctype") or "").lower() != "multipart/form-data":
                    raise CheckFailed("form#upload-risky-venues is not multipart/form-data")
                self.within(form, "input#file-risky-venues", "the file input").send_keys(file.name)
                self.responses.forget()
                self.submit(self.within(form, "button[type=submit]", "the preview button"),
                            {"preview": "#summary", "problem": "#upload-problem"}, "uploading the CSV")
            finally:
                os.unlink(file.name)
            status, _ = self.responses.latest("/local-risk/preview")
            if status != expected_status:
                raise CheckFailed(f"the preview came with HTTP {status}, not {expected_status}: {self.describe()}")
            entries = self.find("#entries", "the number of entries").text.strip()
            problems = self.find("#problems", "the number of problems").text.strip()
            return entries, problems

        entries, problems = preview(rows, 422)
        if (entries, problems) != ("4", "1"):
            raise CheckFailed(f"the preview counts {entries} entries and {problems} problems, not 4 and 1")
        bad = self.find("tr#row-4", "the preview's row 4")
        if "bad" not in (bad.get_attribute("class") or "") or "VenueId must match" not in bad.text:
            raise CheckFailed(f"row 4 (venue id AB1) is not marked with its problem: {bad.text!r}")
        if "good" not in (self.find("tr#row-1", "row 1").get_attribute("class") or ""):
            raise CheckFailed("row 1, a valid venue, is not marked valid")
        if self.driver.find_elements(By.CSS_SELECTOR, "#confirm") or not self.driver.find_elements(
                By.CSS_SELECTOR, "#not-publishable"):
            raise CheckFailed("a list with a bad row offers the confirmation")
        self.screenshot(screenshot)
        self.ok("local-risk preview of 4 venues: HTTP 422, row 4 marked 'VenueId must match …', no confirmation")
        entries, problems = preview(rows[:3], 200)
        if (entries, problems) != ("3", "0") or not self.driver.find_elements(By.CSS_SELECTOR, "button#confirm"):
            raise CheckFailed(f"the corrected list previews {entries} entries, {problems} problems, "
                              "without the confirmation button")
        self.ok("the corrected list previews 3 valid venues with the confirmation button (HTTP 200)")

    def screenshot(self, path):
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        if not self.driver.save_screenshot(path):
            raise CheckFailed(f"could not save the screenshot {path}")


def run(args):
    try:
        secret = totp_secret_from_uri(args.totp_uri)
    except ValueError as error:
        print(f"portal_flow: --totp-uri: {error}", file=sys.stderr)
        return 2
    try:
        from selenium.common.exceptions import WebDriverException
    except ImportError:
        print("portal_flow: Selenium is not installed (pip install 'selenium>=4.10'; "
              "deploy/local/browser-test.sh installs it into .data/browser-venv)", file=sys.stderr)
        return 2
    try:
        driver = start_browser(args.chromium, args.chromedriver)
    except WebDriverException as error:
        print(f"portal_flow: FAILED: headless Chromium did not start: {error.msg}", file=sys.stderr)
        return 1
    flow = PortalFlow(driver, args)
    try:
        if args.local_risk_screenshot:
            # Before the teleTAN: the back button's check after logout walks the teleTAN pages' history.
            flow.login(secret)
            flow.local_risk(args.local_risk_screenshot)
            flow.logout("")
        started = time.monotonic()
        flow.login(secret, step_offset=1 if args.local_risk_screenshot else 0)
        button = flow.check_start_page()
        teletan = flow.issue_first(button)
        issued_at = time.monotonic()
        officer_seconds = issued_at - started
        flow.screenshot(args.screenshot)
        flow.check_result_page(teletan)
        register_teletan(args.verification, teletan)
        flow.ok("the teleTAN registers at verification-service (HTTP 201 with a registrationToken)")
        flow.issue_second(issued_at)
        flow.logout(teletan)
        flow.back_button(teletan)
    except (CheckFailed, WebDriverException) as error:
        message = str(error) if isinstance(error, CheckFailed) else f"the browser failed: {error.msg}"
        print(f"portal_flow: FAILED: {message}", file=sys.stderr)
        root, extension = os.path.splitext(args.screenshot)
        failure_shot = f"{root}-failure{extension or '.png'}"
        try:
            flow.screenshot(failure_shot)
            print(f"portal_flow: the failing page: {failure_shot}", file=sys.stderr)
        except (CheckFailed, WebDriverException):
            pass
        return 1
    finally:
        driver.quit()
    print(f"portal_flow: officer flow (login page to teleTAN shown): {officer_seconds:.2f} s")
    print(f"portal_flow: screenshot of the result page: {args.screenshot}")
    if args.local_risk_screenshot:
        print(f"portal_flow: screenshot of the local-risk preview: {args.local_risk_screenshot}")
    print(f"portal_flow: all {flow.checks} checks passed")
    return 0


def main():
    parser = argparse.ArgumentParser(description="Drive portal-service in headless Chromium (see the module text).")
    parser.add_argument("--self-test", action="store_true", help="check the TOTP code against RFC 6238 and exit")
    parser.add_argument("--portal", help="the portal, e.g. http://127.0.0.1:18104")
    parser.add_argument("--verification", help="verification-service's app API, e.g. http://127.0.0.1:18102")
    parser.add_argument("--username")
    # The password and the URI (which holds the TOTP secret) may come from the environment instead, so that they
    # stay out of the process list.
    parser.add_argument("--password", default=os.environ.get("PORTAL_FLOW_PASSWORD"),
                        help="the user's password (default: $PORTAL_FLOW_PASSWORD)")
    parser.add_argument("--totp-uri", default=os.environ.get("PORTAL_FLOW_TOTP_URI"),
                        help="the otpauth://totp/ URI of `portal-service user add` (default: $PORTAL_FLOW_TOTP_URI)")
    parser.add_argument("--screenshot", help="where to save a PNG of the result page")
    parser.add_argument("--check-event-form", action="store_true",
                        help="the user also has role c19hotline_event: check the EVENT form on the start page")
    parser.add_argument("--local-risk-screenshot",
                        help="the user also has role venue_officer: preview a risky venues' CSV, save a PNG of it")
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--chromedriver", default="/usr/bin/chromedriver")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    missing = [f"--{name.replace('_', '-')}" for name in
               ("portal", "verification", "username", "password", "totp_uri", "screenshot") if not getattr(args, name)]
    if missing:
        parser.error("missing " + ", ".join(missing))
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
