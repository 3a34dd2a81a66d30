// Baseline for the ack-latency benchmark (see BENCHMARKS.md): a Bolt for
// JavaScript app in Socket Mode whose handlers only ack. The benchmark
// driver (go run ./bench) starts it with the Slack fake's URLs:
//
//   SLACK_BOT_TOKEN, SLACK_APP_TOKEN  the fake's tokens
//   SLACK_API_URL                     http://127.0.0.1:PORT/api/ (the fake)
//
// apps.connections.open on the fake returns a ws://127.0.0.1 URL, which
// Bolt's SocketModeClient dials as it would Slack's wss:// URL.
const { App, LogLevel } = require('@slack/bolt');

const app = new App({
  token: process.env.SLACK_BOT_TOKEN,
  appToken: process.env.SLACK_APP_TOKEN,
  socketMode: true,
  logLevel: LogLevel.ERROR,
  clientOptions: { slackApiUrl: process.env.SLACK_API_URL },
});

// Every block action, view submission and view close: ack and nothing else.
app.action(/.*/, async ({ ack }) => {
  await ack();
});
app.view(/.*/, async ({ ack }) => {
  await ack();
});

process.on('SIGTERM', async () => {
  try {
    await app.stop();
  } finally {
    process.exit(0);
  }
});

(async () => {
  await app.start();
  console.log('bolt: connected');
})().catch((err) => {
  console.error('bolt: failed to start:', err);
  process.exit(1);
});
