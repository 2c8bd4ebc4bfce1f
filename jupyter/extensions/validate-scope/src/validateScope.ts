/**
 * Shows nbgrader's Validate button only on notebooks that are nbgrader assignments.
 *
 * nbgrader's lab plugin adds Validate to the toolbar of every notebook. On a
 * course chapter, which has no tests, Validate only runs the notebook and then
 * reports "Success! Your notebook passes all the tests.", which reads like a
 * grade. This plugin hides the button on such notebooks.
 *
 * What counts as an assignment: a notebook with at least one cell that nbgrader
 * marked as a graded, solution or task cell (`metadata.nbgrader`). That is what
 * `nbgrader generate_assignment` leaves in every exercise and what the
 * instructor's source notebooks have: the cells Validate's checks are about.
 * The file's path is not used: students may rename or copy an exercise, and the
 * instructor opens assignments in several folders (source, submitted, autograded).
 */

import type {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import type { DocumentRegistry } from '@jupyterlab/docregistry';
import type { INotebookModel, NotebookPanel } from '@jupyterlab/notebook';
import type { Widget } from '@lumino/widgets';

// Only types are imported: at run time the plugin uses the objects JupyterLab
// hands to it, so the build bundles no JupyterLab code and asks for no
// particular JupyterLab 4 release.

/** The toolbar item name nbgrader 0.9 gives its button, and the button's class. */
const VALIDATE_NAME = 'runAll';
const VALIDATE_CLASS = 'validate-button';

/** nbgrader's cell metadata, as far as this plugin reads it. */
interface INbgraderCell {
  grade?: boolean;
  solution?: boolean;
  task?: boolean;
}

/** Whether any cell is one of nbgrader's graded, solution or task cells. */
function isAssignment(model: INotebookModel): boolean {
  for (const cell of model.cells) {
    const nbgrader = cell.getMetadata('nbgrader') as INbgraderCell | undefined;
    if (nbgrader && (nbgrader.grade || nbgrader.solution || nbgrader.task)) {
      return true;
    }
  }
  return false;
}

/**
 * nbgrader's Validate item in the panel's toolbar, if there is one: found by
 * the name nbgrader gives it or, should that change, by the class of its
 * button (only there once the toolbar has drawn it).
 */
function findValidate(panel: NotebookPanel): Widget | undefined {
  const names = Array.from(panel.toolbar.names());
  return Array.from(panel.toolbar.children()).find(
    (item, i) =>
      names[i] === VALIDATE_NAME ||
      item.node.querySelector(`.${VALIDATE_CLASS}`) !== null
  );
}

class ValidateScope
  implements DocumentRegistry.IWidgetExtension<NotebookPanel, INotebookModel>
{
  createNew(
    panel: NotebookPanel,
    context: DocumentRegistry.IContext<INotebookModel>
  ): void {
    let button: Widget | undefined;
    // Widget extensions run one after the other, in no promised order: look
    // once this round is over, so that nbgrader's has added its button. Take
    // it then, while it is still in the toolbar: a narrow toolbar later moves
    // items into its "more" pop-up, where they cannot be looked up.
    void Promise.resolve().then(() => {
      button = findValidate(panel);
    });
    const update = (): void => {
      button = button ?? findValidate(panel);
      if (button && !panel.isDisposed) {
        button.setHidden(!isAssignment(context.model));
      }
    };
    // The cells are known once the context is ready. Deciding again after each
    // save (or reload) lets an instructor who has just made a notebook an
    // assignment (Create Assignment) see Validate without reopening it.
    void context.ready.then(update);
    context.fileChanged.connect(update);
    panel.disposed.connect(() => context.fileChanged.disconnect(update));
  }
}

/** Hides Validate on notebooks that are not assignments. */
export const validateScope: JupyterFrontEndPlugin<void> = {
  id: '@gpu-course/validate-scope:plugin',
  description:
    "Shows nbgrader's Validate button only on notebooks that are nbgrader assignments.",
  autoStart: true,
  activate: (app: JupyterFrontEnd): void => {
    app.docRegistry.addWidgetExtension('Notebook', new ValidateScope());
  }
};
