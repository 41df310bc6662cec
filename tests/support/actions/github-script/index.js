// actions/github-script on this host: the script as an async function of github, context, core
// and require. `github` speaks to $GITHUB_API_URL with the token, through the REST routes the
// generated workflows call (an unknown method fails the step, never answers for the API).
"use strict";
const fs = require("fs");

const ROUTES = {
  issues: {
    listComments: ["GET", "/repos/{owner}/{repo}/issues/{issue_number}/comments"],
    createComment: ["POST", "/repos/{owner}/{repo}/issues/{issue_number}/comments"],
    updateComment: ["PATCH", "/repos/{owner}/{repo}/issues/comments/{comment_id}"],
  },
  pulls: {
    list: ["GET", "/repos/{owner}/{repo}/pulls"],
    create: ["POST", "/repos/{owner}/{repo}/pulls"],
    update: ["PATCH", "/repos/{owner}/{repo}/pulls/{pull_number}"],
  },
};

function input(name) {
  return process.env[`INPUT_${name.replace(/ /g, "_").toUpperCase()}`] || "";
}

async function request(method, template, params, token) {
  const rest = { ...params };
  const path = template.replace(/\{(\w+)\}/g, (_, key) => {
    const value = rest[key];
    delete rest[key];
    return encodeURIComponent(value);
  });
  const url = new URL(process.env.GITHUB_API_URL.replace(/\/$/, "") + path);
  const init = { method, headers: { authorization: `token ${token}`, accept: "application/vnd.github+json",
                                    "user-agent": "actions/github-script" } };
  if (method === "GET") {
    for (const [key, value] of Object.entries(rest)) url.searchParams.set(key, String(value));
  } else {
    init.body = JSON.stringify(rest);
    init.headers["content-type"] = "application/json";
  }
  const response = await fetch(url, init);
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${url.pathname}: HTTP ${response.status} ${text}`);
  return { status: response.status, data: text ? JSON.parse(text) : null };
}

function client(token) {
  const rest = {};
  for (const [scope, methods] of Object.entries(ROUTES)) {
    rest[scope] = {};
    for (const [name, [method, template]] of Object.entries(methods)) {
      const call = (params) => request(method, template, params || {}, token);
      call.route = [method, template];
      rest[scope][name] = call;
    }
  }
  rest.issues = new Proxy(rest.issues, unknown("issues"));
  rest.pulls = new Proxy(rest.pulls, unknown("pulls"));
  // Octokit's paginate: every page of a list, as one array.
  async function paginate(method, params) {
    const all = [];
    for (let page = 1; ; page++) {
      const { data } = await method({ per_page: 30, ...params, page });
      all.push(...data);
      if (data.length < (params.per_page || 30)) return all;
    }
  }
  return { rest, paginate };
}

function unknown(scope) {
  return { get(target, name) {
    if (name in target || typeof name === "symbol") return target[name];
    throw new Error(`github.rest.${scope}.${String(name)}: not a route this stand-in serves`);
  } };
}

function context() {
  const payload = JSON.parse(fs.readFileSync(process.env.GITHUB_EVENT_PATH, "utf8"));
  const [owner, repo] = process.env.GITHUB_REPOSITORY.split("/");
  const number = (payload.pull_request || payload.issue || payload).number;
  return { payload, eventName: process.env.GITHUB_EVENT_NAME, sha: process.env.GITHUB_SHA,
           ref: process.env.GITHUB_REF, repo: { owner, repo }, issue: { owner, repo, number } };
}

const core = {
  setOutput: (name, value) => fs.appendFileSync(process.env.GITHUB_OUTPUT, `${name}=${value}\n`),
  setFailed: (message) => { process.exitCode = 1; console.log(`::error::${message}`); },
  info: (message) => console.log(message),
  warning: (message) => console.log(`::warning::${message}`),
};

(async () => {
  const AsyncFunction = Object.getPrototypeOf(async () => {}).constructor;
  const run = new AsyncFunction("require", "github", "context", "core", "process", input("script"));
  try {
    await run(require, client(input("github-token")), context(), core, process);
  } catch (error) {
    core.setFailed(`Unhandled error: ${error.message}`);
  }
})();
