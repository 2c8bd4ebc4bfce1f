/**
 * Warns the student before the batch job that runs JupyterLab reaches its time limit.
 *
 * At the limit the scheduler kills JupyterLab: kernels and unsaved changes are
 * lost. The job asks the scheduler for a signal some minutes before; the
 * students' mode's server extension (jupyter/student/course_time_limit.py)
 * records it and answers `gpu-course/time-limit`. This plugin asks it every few
 * seconds and, once warned, saves every open document and shows a notification
 * with the time left, updated until the end; it saves once more in the last
 * minute, for what was typed after the warning. A server without that route
 * (the instructor's mode) answers 404, and one that is no batch job says so:
 * nothing is asked again.
 */

import type {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';

const ROUTE = 'gpu-course/time-limit';
/** Save again this many seconds before the limit. */
const LAST_SAVE_SECONDS = 60;
/** Ask again this long after a failed question (the server may be busy). */
const RETRY_SECONDS = 30;

/** The server extension's answer. */
interface ITimeLimit {
  warned: boolean;
  seconds_left: number | null;
  poll_seconds: number | null;
}

/** The server's answer, or null where the server has no such route. */
async function ask(app: JupyterFrontEnd): Promise<ITimeLimit | null> {
  const settings = app.serviceManager.serverSettings;
  const headers: Record<string, string> = settings.token
    ? { Authorization: `token ${settings.token}` }
    : {};
  // Called on its own: the browser's fetch refuses the settings object as `this`.
  const fetch = settings.fetch;
  const response = await fetch(settings.baseUrl + ROUTE, {
    ...settings.init,
    headers
  });
  if (response.status === 404) {
    return null;
  }
  if (!response.ok) {
    throw new Error(`${ROUTE} answered ${response.status}`);
  }
  return (await response.json()) as ITimeLimit;
}

/**
 * The notification's text for `left` seconds (null: not known), under the 140
 * characters a notification shows.
 */
function warning(left: number | null): string {
  let when = 'soon';
  if (left !== null) {
    const minutes = Math.max(1, Math.round(left / 60));
    when = minutes === 1 ? 'in about 1 minute' : `in about ${minutes} minutes`;
  }
  return (
    `This session ends ${when} (its time limit): kernels stop then. ` +
    'Your open documents were saved; save later changes too.'
  );
}

/** Shows the warning and saves, once warned; the seconds until the next question. */
class Watch {
  constructor(private app: JupyterFrontEnd) {}

  async check(): Promise<number | null> {
    const state = await ask(this.app);
    if (state === null) {
      return null;
    }
    if (state.warned) {
      await this.warn(state.seconds_left);
    }
    return state.poll_seconds;
  }

  private async warn(left: number | null): Promise<void> {
    const message = warning(left);
    if (this.notification === '') {
      await this.saveAll();
      this.notification = (await this.app.commands.execute('apputils:notify', {
        message,
        type: 'warning',
        options: {
          autoClose: false,
          actions: [{ label: 'Save All', commandId: 'docmanager:save-all' }]
        }
      })) as string;
    } else {
      // A notification the student has closed stays closed.
      await this.app.commands.execute('apputils:update-notification', {
        id: this.notification,
        message,
        type: 'warning',
        autoClose: false
      });
    }
    if (!this.savedLast && left !== null && left <= LAST_SAVE_SECONDS) {
      this.savedLast = true;
      await this.saveAll();
    }
  }

  private async saveAll(): Promise<void> {
    try {
      await this.app.commands.execute('docmanager:save-all');
    } catch (reason) {
      console.warn('gpu-course time limit: saving failed', reason);
    }
  }

  private notification = '';
  private savedLast = false;
}

/** Warns before the job's time limit and saves the open documents. */
export const timeLimit: JupyterFrontEndPlugin<void> = {
  id: '@gpu-course/validate-scope:time-limit',
  description:
    "Warns before the session's time limit and saves the open documents.",
  autoStart: true,
  activate: (app: JupyterFrontEnd): void => {
    const watch = new Watch(app);
    const loop = async (): Promise<void> => {
      let next: number | null = RETRY_SECONDS;
      try {
        next = await watch.check();
      } catch (reason) {
        console.warn('gpu-course time limit: no answer', reason);
      }
      if (next !== null) {
        window.setTimeout(() => void loop(), next * 1000);
      }
    };
    void app.restored.then(loop);
  }
};
