#!/usr/bin/env python3
"""The web page at /ui in headless Chromium, driven by Selenium. Run by crates/gateway/tests/ui.rs,
which starts the gateways and scripts the upstream replies in the order below.

Desktop window (1280x900), the gateway with a key:
 1. The page loads; listing the models is refused without a key (401), so the page asks for the
    key with the key field focused; the key is typed and saved; the model picker fills.
 2. Web search and image generation are switched on (code interpreter is on by default);
    data.csv is attached (uploaded to /v1/files).
 3. Shift+Enter makes a new line without sending; Enter sends (upstream replies 1-4). The answer
    streams in, seen while the upstream stalls mid-answer with the Stop button up, after a
    python_execute block (its code and its output "total 42"), a web search block (its query),
    an image generation block (the PNG from base64 `result`, decoded) and the PNG the code wrote
    listed as a container file (shown inline from a blob: URL; its Download button saves it).
    The Markdown is rendered (strong, code, list, heading, a highlighted code block, a table);
    the HTML in the answer is shown as text: no element was made from it, no alert came.
 4. The next question (upstream 5: its first words, then a stall) is stopped with Stop.
 5. Reload: the key and the conversation come back (browser storage, then the server's items):
    the blocks, both images and the answer show again.
 6. New conversation empties the page; the first one is opened again from the list.
 7. The Markdown renderer on hostile and tricky input, through the page's own module.
Phone window (390x844):
 8. No horizontal scrolling; the list is behind the menu button (Escape closes it); a question
    is answered (upstream 6); the next one (upstream 7 stalls) is stopped with Escape.
The gateway without a key:
 9. The page works with no key at all: its same-origin requests pass the browser guard.

Any console error of the page (a Content-Security-Policy violation, an exception, a failed
request other than the expected 401s) fails the run. Screenshots go to --screenshots.
"""

import argparse
import json
import os
import sys
import tempfile
import shutil
import traceback
from pathlib import Path

# Selenium must not look for drivers or browsers on the network: both paths are given.
os.environ["SE_OFFLINE"] = "true"

from selenium import webdriver  # noqa: E402
from selenium.common.exceptions import NoAlertPresentException, StaleElementReferenceException  # noqa: E402
from selenium.webdriver.chrome.options import Options  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

DESKTOP = (1280, 900)
PHONE = (390, 844)
WAIT = 60


class Page:
    def __init__(self, shots: Path, downloads: Path):
        options = Options()
        options.binary_location = os.environ["TOOLBRIDGE_CHROMIUM"]
        for flag in [
            "--headless=new",
            "--no-sandbox",
            "--disable-dev-shm-usage",
            "--disable-gpu",
            "--no-proxy-server",
            "--no-first-run",
            "--disable-extensions",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--metrics-recording-only",
            "--force-color-profile=srgb",
            "--hide-scrollbars",
            "--lang=en-US",
            f"--window-size={DESKTOP[0]},{DESKTOP[1]}",
        ]:
            options.add_argument(flag)
        options.add_experimental_option(
            "prefs",
            {
                "download.default_directory": str(downloads),
                "download.prompt_for_download": False,
                "safebrowsing.enabled": False,
            },
        )
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        service = Service(executable_path=os.environ["TOOLBRIDGE_CHROMEDRIVER"])
        self.driver = webdriver.Chrome(options=options, service=service)
        self.driver.set_script_timeout(30)
        self.shots = shots
        self.downloads = downloads
        self.taken = []

    # ---- helpers ----

    def wait(self, condition, what, timeout=WAIT):
        try:
            return WebDriverWait(
                self.driver, timeout, poll_frequency=0.1, ignored_exceptions=[StaleElementReferenceException]
            ).until(lambda d: condition())
        except Exception as e:
            raise AssertionError(f"timed out waiting for {what}") from e

    def one(self, css, within=None):
        return (within or self.driver).find_element(By.CSS_SELECTOR, css)

    def all(self, css, within=None):
        return (within or self.driver).find_elements(By.CSS_SELECTOR, css)

    def js(self, script, *args):
        return self.driver.execute_script(script, *args)

    def shot(self, name, what):
        path = self.shots / f"{name}.png"
        self.driver.save_screenshot(str(path))
        self.taken.append({"file": path.name, "shows": what})

    def text_of(self, element):
        return self.js("return arguments[0].textContent", element)

    def console_errors(self, allowed=()):
        """The page's console errors since the last call, less the expected ones."""
        errors = []
        for entry in self.driver.get_log("browser"):
            if entry.get("level") != "SEVERE":
                continue
            message = entry.get("message", "")
            if any(a in message for a in allowed):
                continue
            errors.append(message)
        return errors

    def no_console_errors(self, phase, allowed=()):
        errors = self.console_errors(allowed)
        assert not errors, f"console errors during {phase}: {errors}"

    def image_loaded(self, img):
        return self.js("return arguments[0].complete && arguments[0].naturalWidth > 0", img)

    def assert_no_alert(self):
        try:
            alert = self.driver.switch_to.alert
        except NoAlertPresentException:
            return
        text = alert.text
        alert.dismiss()
        raise AssertionError(f"an alert came up: {text!r}")

    def running(self):
        return self.one("#stop").is_displayed() and not self.one("#send").is_displayed()

    def idle(self):
        return self.one("#send").is_displayed() and not self.one("#stop").is_displayed()

    def answers(self):
        return self.all(".msg.assistant")

    def focused_id(self):
        return self.js("return document.activeElement && document.activeElement.id")

    def no_horizontal_scroll(self):
        width, inner = self.js(
            "return [document.documentElement.scrollWidth, window.innerWidth]"
        )
        assert width <= inner, f"the page scrolls sideways: {width} > {inner}"


def check_answer_markup(page, answer):
    """The first question's answer: Markdown rendered, HTML left as text."""
    assert page.text_of(page.one("strong", answer)) == "total"
    codes = [page.text_of(c) for c in page.all(":not(pre) > code", answer)]
    assert "42" in codes and "data.csv" in codes, codes
    assert page.text_of(page.one("h2", answer)) == "How"
    assert len(page.all("ul > li", answer)) == 2
    block = page.one(".codeblock pre code", answer)
    keywords = [page.text_of(k) for k in page.all(".tok-kw", block)]
    comments = [page.text_of(k) for k in page.all(".tok-com", block)]
    strings = [page.text_of(k) for k in page.all(".tok-str", block)]
    assert "import" in keywords and "for" in keywords, keywords
    assert comments == ["# the reader"], comments
    assert "'n'" in strings, strings
    assert len(page.all("table tbody tr", answer)) == 2
    assert page.all("td.align-right", answer), "the right-aligned column"
    text = page.text_of(answer)
    assert "<img src=x onerror=alert(1)>" in text, text
    assert "<script>alert(2)</script>" in text, text
    assert not page.all("img", answer), "an image element was made from the answer"
    assert not page.all("script", answer), "a script element was made from the answer"
    # Nowhere on the page: the one script is the page's own module.
    assert page.js("return document.querySelectorAll('img[src=\"x\"], [onerror]').length") == 0
    scripts = page.js("return Array.from(document.scripts).map(s => s.getAttribute('src'))")
    assert scripts == ["/ui/app.js"], scripts
    page.assert_no_alert()


def check_tool_blocks(page):
    code = page.wait(
        lambda: next(
            (b for b in page.all(".tool-code-interpreter-call") if "total 42" in page.text_of(b)),
            None,
        ),
        "the python_execute block with its output",
    )
    assert "csv.DictReader" in page.text_of(page.one(".codeblock code", code))
    assert "total 42" in page.text_of(page.one("pre.logs", code))
    assert page.text_of(page.one(".badge", code)) == "done"
    assert code.get_attribute("open") is not None, "the block is expanded"
    search = page.one(".tool-web-search-call")
    assert page.text_of(page.one("q.query", search)) == "sum a csv column"
    image = page.wait(lambda: page.all(".tool-image-generation-call img.generated"), "the generated image")[0]
    page.wait(lambda: page.image_loaded(image), "the generated image to decode")
    assert image.get_attribute("src").startswith("data:image/png;base64,iVBOR")
    assert page.js("return arguments[0].naturalWidth", image) == 256
    chart = page.wait(
        lambda: [
            f for f in page.all(".files .file") if "chart.png" in page.text_of(page.one(".file-name", f))
        ],
        "the container file chart.png",
    )[0]
    img = page.one("img.generated", chart)
    page.wait(lambda: page.image_loaded(img), "the container file's image to load")
    assert img.get_attribute("src").startswith("blob:")
    assert page.js("return arguments[0].naturalWidth", img) == 240
    return chart


MARKDOWN_CASES = [
    ("<b>bold</b> & <i>it</i>", "<p>&lt;b&gt;bold&lt;/b&gt; &amp; &lt;i&gt;it&lt;/i&gt;</p>"),
    ("[x](javascript:alert(1))", "<p>x</p>"),
    ("[x](data:text/html,<script>alert(1)</script>)", "<p>x</p>"),
    (
        "[site](https://example.org/a?b=1)",
        '<p><a href="https://example.org/a?b=1" target="_blank" rel="noopener noreferrer nofollow">site</a></p>',
    ),
    (
        "![pic](https://example.org/p.png)",
        '<p><a href="https://example.org/p.png" target="_blank" rel="noopener noreferrer nofollow">image: pic</a></p>',
    ),
    ("**a *b* c**", "<p><strong>a <em>b</em> c</strong></p>"),
    ("snake_case_name and 2*3*4", "<p>snake_case_name and 2*3*4</p>"),
    ("`<script>`", "<p><code>&lt;script&gt;</code></p>"),
    ("1. one\n2. two\n   - nested", "<ol><li>one</li><li>two<ul><li>nested</li></ul></li></ol>"),
    ("> quote\n> more", "<blockquote><p>quote<br>more</p></blockquote>"),
    ("# Title <em>x</em>", "<h1>Title &lt;em&gt;x&lt;/em&gt;</h1>"),
    ("a\\*b\\* ~~gone~~", "<p>a*b* <del>gone</del></p>"),
    ("see https://example.org/x.", '<p>see <a href="https://example.org/x" target="_blank" rel="noopener noreferrer nofollow">https://example.org/x</a>.</p>'),
]


def check_markdown_module(page):
    rendered = page.driver.execute_async_script(
        """
        const [cases, done] = [arguments[0], arguments[arguments.length - 1]];
        import('/ui/markdown.js').then((m) => {
          done(cases.map((src) => {
            const box = document.createElement('div');
            box.append(m.renderMarkdown(src));
            return box.innerHTML;
          }));
        }, (e) => done('import failed: ' + e));
        """,
        [src for src, _ in MARKDOWN_CASES],
    )
    assert isinstance(rendered, list), rendered
    for (src, want), got in zip(MARKDOWN_CASES, rendered):
        assert got == want, f"markdown {src!r}:\n  got  {got}\n  want {want}"
    # A fence still streaming (not closed yet) is a code block up to the end, highlighted.
    code = page.driver.execute_async_script(
        """
        const done = arguments[arguments.length - 1];
        import('/ui/markdown.js').then((m) => {
          const box = document.createElement('div');
          box.append(m.renderMarkdown('Here:\\n```js\\nlet s = "<i>"; // note\\n'));
          done({
            kw: Array.from(box.querySelectorAll('.tok-kw')).map((n) => n.textContent),
            str: Array.from(box.querySelectorAll('.tok-str')).map((n) => n.textContent),
            com: Array.from(box.querySelectorAll('.tok-com')).map((n) => n.textContent),
            italic: box.querySelectorAll('i').length,
            lang: box.querySelector('.codelang').textContent,
          });
        });
        """
    )
    assert code == {"kw": ["let"], "str": ['"<i>"'], "com": ["// note"], "italic": 0, "lang": "js"}, code


def run(args):
    shots = Path(args.screenshots)
    shots.mkdir(parents=True, exist_ok=True)
    for old in [*shots.glob("*.png"), *shots.glob("*.html")]:
        old.unlink()
    downloads = Path(tempfile.mkdtemp(prefix="tb-ui-downloads-"))
    page = Page(shots, downloads)
    d = page.driver
    steps = []
    try:
        # 1. The key.
        d.get(args.url)
        notice = page.one("#notice")
        page.wait(
            lambda: notice.is_displayed() and notice.text == "This gateway needs an API key. Enter it under Settings, then Save.",
            "the request for a key",
        )
        assert page.focused_id() == "api-key", page.focused_id()
        page.shot("01-key-needed", "desktop: the page asks for the API key")
        page.one("#api-key").send_keys(args.key + Keys.ENTER)
        page.wait(lambda: [o.get_attribute("value") for o in page.all("#model option")] == ["m"], "the model list")
        page.wait(lambda: not notice.is_displayed(), "the notice to go")
        assert page.focused_id() == "prompt", page.focused_id()
        page.no_console_errors("the key", allowed=["status of 401"])
        steps.append("key entered; models listed")

        # 2. Tools and the file.
        assert page.one("#tool-code").is_selected()
        for box in ["#tool-search", "#tool-image"]:
            page.one(box).click()
            assert page.one(box).is_selected()
        page.one("#attach").send_keys(str(Path(args.file).resolve()))
        page.wait(
            lambda: [page.text_of(c).strip("×").strip() for c in page.all("#attachments .chip")] == ["data.csv"],
            "the upload",
        )
        steps.append("tools on; file uploaded")

        # 3. The question.
        prompt = page.one("#prompt")
        prompt.click()
        prompt.send_keys("Sum the n column")
        prompt.send_keys(Keys.SHIFT, Keys.ENTER)
        prompt.send_keys("of the attached file, please.")
        assert prompt.get_attribute("value") == "Sum the n column\nof the attached file, please."
        assert not page.all(".msg.user"), "Shift+Enter sent the message"
        prompt.send_keys(Keys.ENTER)
        page.wait(lambda: page.all(".msg.user"), "the question on the page")
        user = page.all(".msg.user")[0]
        assert "Sum the n column\nof the attached file" in page.text_of(user)
        assert "data.csv" in page.text_of(page.one(".chip", user))
        assert not page.all("#attachments .chip"), "the attachment was sent with the message"
        page.wait(
            lambda: len(page.answers()) >= 2 and "The total is" in page.text_of(page.answers()[-1]),
            "the answer to start streaming",
        )
        # The upstream stalls mid-answer here: the text so far, the run still going.
        assert page.running(), "Stop is up while the answer streams"
        assert page.one("#status").text == "Answering…"
        partial = page.text_of(page.answers()[-1])
        assert "three rows" not in partial, partial
        assert page.answers()[-1].get_attribute("aria-busy") == "true"
        page.shot("02-streaming", "desktop: the answer half streamed, tool blocks above, Stop button up")
        page.wait(page.idle, "the answer to finish")
        page.wait(lambda: page.one("#status").text == "Done.", "the Done status")
        answer = page.answers()[-1]
        assert answer.get_attribute("aria-busy") == "false"
        first = page.text_of(page.one(".markdown", page.answers()[0]))
        assert first == "Let me read the file first.", first
        chart = check_tool_blocks(page)
        check_answer_markup(page, answer)
        # A tool block folds and unfolds from its summary, by mouse or keyboard.
        block = page.one(".tool-code-interpreter-call")
        page.one("summary", block).click()
        assert block.get_attribute("open") is None, "the block folds"
        page.one("summary", block).send_keys(Keys.ENTER)
        assert block.get_attribute("open") is not None, "the block unfolds"
        page.one("#prompt").click()
        page.js("const log = document.getElementById('log'); log.scrollTop = log.scrollHeight")
        page.shot("03-answer", "desktop: the end of the finished answer (Markdown, HTML as text) and the files code wrote")
        page.one("button", chart).click()
        saved = downloads / "chart.png"
        page.wait(lambda: saved.exists() and saved.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", "the download")
        page.no_console_errors("the first answer")
        steps.append("answer streamed with code, search, image, file; markup stayed text; download saved")

        # 4. Stop.
        prompt.send_keys("This one will be stopped." + Keys.ENTER)
        page.wait(
            lambda: len(page.answers()) >= 3 and "Thinking" in page.text_of(page.answers()[-1]),
            "the stalled answer's first words",
        )
        assert page.running()
        page.shot("04-running", "desktop: a second answer stalled, Stop button up")
        page.one("#stop").click()
        page.wait(page.idle, "the run to stop")
        stopped = page.answers()[-1]
        page.wait(lambda: "Stopped." in page.text_of(stopped), "the stopped note")
        assert "NEVER-SHOWN" not in page.text_of(d.find_element(By.ID, "log"))
        assert page.one("#status").text == "Stopped."
        assert page.focused_id() == "prompt", page.focused_id()
        page.no_console_errors("the stop")
        steps.append("stopped")

        # 5. Reload.
        d.refresh()
        page.wait(lambda: page.all(".tool-code-interpreter-call"), "the conversation after the reload")
        assert page.one("#api-key").get_attribute("value") == args.key
        titles = [page.text_of(b) for b in page.all(".conversation-open")]
        assert titles == ["Sum the n column"], titles
        assert page.one(".conversation-open").get_attribute("aria-current") == "true"
        users = [page.text_of(u) for u in page.all(".msg.user")]
        assert len(users) == 2 and "data.csv" in users[0] and "This one will be stopped." in users[1], users
        check_tool_blocks(page)
        # The files code wrote are shown with the turn that wrote them, before the next question.
        assert page.js(
            "const files = document.querySelector('.files');"
            "const next = document.querySelectorAll('.msg.user')[1];"
            "return !!(files.compareDocumentPosition(next) & Node.DOCUMENT_POSITION_FOLLOWING)"
        ), "the files block is in its own turn"
        final = next(a for a in page.answers() if "three rows" in page.text_of(a))
        check_answer_markup(page, final)
        page.wait(lambda: not page.one("#status").text, "the loading status to clear")
        page.js("document.getElementById('log').scrollTop = 0")
        page.shot("05-reloaded", "desktop: after a reload, the top of the conversation read back from the server")
        page.no_console_errors("the reload")
        steps.append("reloaded: conversation shown again")

        # 6. New conversation and back.
        page.one("#new-conversation").click()
        assert not page.all(".msg"), "the new conversation is empty"
        assert page.one("#empty").is_displayed()
        assert page.focused_id() == "prompt"
        assert page.one(".conversation-open").get_attribute("aria-current") is None
        page.one(".conversation-open").click()
        page.wait(lambda: len(page.all(".msg.user")) == 2, "the first conversation again")
        steps.append("new conversation; back to the first")

        # 7. The renderer itself.
        check_markdown_module(page)
        page.no_console_errors("the renderer checks")
        steps.append("markdown renderer cases")

        # 8. A phone.
        d.set_window_size(*PHONE)
        d.refresh()
        page.wait(lambda: page.all(".tool-code-interpreter-call"), "the conversation on a phone")
        menu = page.one("#menu-toggle")
        assert menu.is_displayed()
        assert not page.one("#sidebar").is_displayed(), "the list is behind the menu"
        assert page.one("#prompt").is_displayed() and page.one("#send").is_displayed()
        right = page.js("return document.getElementById('send').getBoundingClientRect().right")
        assert right <= PHONE[0], right
        page.no_horizontal_scroll()
        page.shot("06-phone", "phone: the conversation, the composer at the bottom")
        menu.click()
        page.wait(lambda: page.one("#sidebar").is_displayed(), "the menu to open")
        assert menu.get_attribute("aria-expanded") == "true"
        page.wait(
            lambda: page.js("return getComputedStyle(document.getElementById('sidebar')).transform") == "none",
            "the drawer to finish sliding in",
        )
        page.shot("07-phone-menu", "phone: the menu with conversations and settings")
        d.switch_to.active_element.send_keys(Keys.ESCAPE)
        page.wait(lambda: not page.one("#sidebar").is_displayed(), "the menu to close")
        assert page.focused_id() == "menu-toggle"
        prompt = page.one("#prompt")
        prompt.click()
        prompt.send_keys("Hello from a phone" + Keys.ENTER)
        page.wait(lambda: "phone-sized" in page.text_of(page.answers()[-1]), "the phone answer")
        page.wait(page.idle, "the phone answer to finish")
        page.no_horizontal_scroll()
        page.shot("08-phone-answer", "phone: a short answer with a numbered list")
        prompt.send_keys("Stop me with Escape" + Keys.ENTER)
        page.wait(lambda: "Still thinking" in page.text_of(page.answers()[-1]), "the second stalled answer")
        assert page.running()
        prompt.send_keys(Keys.ESCAPE)
        page.wait(page.idle, "Escape to stop the run")
        page.wait(lambda: "Stopped." in page.text_of(page.answers()[-1]), "the stopped note")
        page.no_console_errors("the phone")
        steps.append("phone: no sideways scroll, menu, answer, Escape stops")

        # 9. No key at all.
        d.set_window_size(*DESKTOP)
        d.get(args.keyless_url)
        page.wait(lambda: [o.get_attribute("value") for o in page.all("#model option")] == ["m"], "the keyless model list")
        assert page.one("#api-key").get_attribute("value") == ""
        assert not page.one("#notice").is_displayed()
        prompt = page.one("#prompt")
        prompt.send_keys("Hello without a key" + Keys.ENTER)
        page.wait(
            lambda: page.answers() and "answers its own page" in page.text_of(page.answers()[-1]),
            "the keyless answer",
        )
        page.wait(page.idle, "the keyless answer to finish")
        page.shot("09-keyless", "desktop: a gateway without keys, answering its own page")
        page.no_console_errors("the keyless gateway")
        steps.append("keyless gateway answered its own page")
    except BaseException:
        try:
            page.driver.save_screenshot(str(shots / "failure.png"))
            (shots / "failure.html").write_text(d.page_source)
            print("console:", json.dumps(page.driver.get_log("browser"), indent=1), file=sys.stderr)
        except Exception:
            pass
        traceback.print_exc()
        raise
    finally:
        d.quit()
        shutil.rmtree(downloads, ignore_errors=True)
    print(json.dumps({"steps": steps, "screenshots": page.taken}, indent=1))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--keyless-url", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--file", required=True)
    parser.add_argument("--screenshots", required=True)
    args = parser.parse_args()
    try:
        run(args)
    except BaseException:
        sys.exit(1)


if __name__ == "__main__":
    main()
