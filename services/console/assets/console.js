// Progressive enhancement only: every page works without this file. No framework, no build step.
(function () {
  'use strict';

  function onReady(run) {
    if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', run);
    else run();
  }

  // A one-time secret: the Copy button appears only where script can copy.
  function enableCopyButtons() {
    document.querySelectorAll('button[data-copy]').forEach(function (button) {
      var field = document.getElementById(button.getAttribute('data-copy'));
      var status = document.querySelector('[data-copy-status="' + button.getAttribute('data-copy') + '"]');
      if (!field) return;
      button.hidden = false;
      button.addEventListener('click', function () {
        var say = function (text) { if (status) status.textContent = text; };
        var fallback = function () {
          field.focus();
          field.select();
          var copied = false;
          try { copied = document.execCommand('copy'); } catch (error) { copied = false; }
          say(copied ? 'Copied to the clipboard.' : 'Select the text and copy it with your keyboard.');
        };
        if (navigator.clipboard && window.isSecureContext) {
          navigator.clipboard.writeText(field.value).then(function () { say('Copied to the clipboard.'); }, fallback);
        } else {
          fallback();
        }
      });
    });
  }

  // Typed confirmations (sandbox reset): the button stays disabled until the words match. The server checks again.
  function enableTypedConfirmations() {
    document.querySelectorAll('input[data-confirm-text]').forEach(function (input) {
      var form = input.form;
      var button = form && form.querySelector('button[type="submit"]');
      if (!button) return;
      var expected = input.getAttribute('data-confirm-text');
      var update = function () { button.disabled = input.value.trim() !== expected; };
      input.addEventListener('input', update);
      update();
    });
  }

  // CEL conditions are checked as they are typed, by the same checker the API uses when a rule is saved.
  function enableConditionChecks() {
    document.querySelectorAll('textarea[data-check-condition]').forEach(function (area) {
      var output = document.getElementById(area.getAttribute('data-check-output'));
      var endpoint = area.getAttribute('data-check-condition');
      var csrf = area.getAttribute('data-csrf');
      var timer;
      var latest = 0;
      var show = function (ok, text) {
        if (!output) return;
        output.textContent = text;
        output.className = ok ? 'condition-check ok' : 'condition-check problem';
        if (ok) area.removeAttribute('aria-invalid'); else area.setAttribute('aria-invalid', 'true');
      };
      var check = function () {
        var asked = ++latest;
        if (area.value.trim() === '') { show(true, 'An empty condition matches every record.'); return; }
        fetch(endpoint, {
          method: 'POST',
          credentials: 'same-origin',
          headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-csrf-token': csrf, accept: 'application/json' },
          body: new URLSearchParams({ condition: area.value }).toString()
        }).then(function (response) { return response.json(); }).then(function (answer) {
          if (asked !== latest) return;
          show(answer.valid, answer.valid ? 'The condition is valid.' : answer.message);
        }).catch(function () { /* the server checks again on save */ });
      };
      area.addEventListener('input', function () { clearTimeout(timer); timer = setTimeout(check, 250); });
    });
  }

  function focusErrorSummary() {
    var summary = document.getElementById('error-summary');
    if (summary) summary.focus();
  }

  onReady(function () {
    enableCopyButtons();
    enableTypedConfirmations();
    enableConditionChecks();
    focusErrorSummary();
  });
})();
